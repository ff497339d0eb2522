// The type an upload is stored with, over the first bytes of each format as its usual producer writes them:
// what detectType reads in them, and what chooseContentType makes of that and the declared type. A pure unit
// test of uploads/sniff.ts; uploads-processing.test.ts runs the same choice through a real upload.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { crc32, deflateRawSync, gzipSync } from 'node:zlib'
import sharp from 'sharp'
import { chooseContentType, detectType, PREVIEWABLE, SNIFF_BYTES } from '../src/resources/uploads/sniff.ts'

/** A ZIP's local entries as a packer writes them (deflated, with their CRC), without the central directory. */
function zipOf(entries: [name: string, content: string, stored?: 'stored'][]): Buffer {
  const parts = entries.map(([name, content, stored]) => {
    const data = Buffer.from(content)
    const packed = stored ? data : deflateRawSync(data)
    const header = Buffer.alloc(30)
    header.writeUInt32LE(0x04034b50, 0)
    header.writeUInt16LE(20, 4)
    header.writeUInt16LE(stored ? 0 : 8, 8)
    header.writeUInt32LE(crc32(data), 14)
    header.writeUInt32LE(packed.length, 18)
    header.writeUInt32LE(data.length, 22)
    header.writeUInt16LE(Buffer.byteLength(name), 26)
    return Buffer.concat([header, Buffer.from(name), packed])
  })
  return Buffer.concat(parts)
}

const OOXML_TYPES = (main: string, part: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="${part}" ContentType="application/vnd.openxmlformats-officedocument.${main}.main+xml"/></Types>`
const RELS =
  '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>'
const manyParagraphs = Array.from(
  { length: 3000 },
  (_, i) => `<w:p><w:r><w:t>Paragraph ${i} ${(i * 7919) % 10007}</w:t></w:r></w:p>`,
).join('')

const latin1 = (text: string) => Buffer.from(text, 'latin1')
const u32be = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const u32le = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(n)
  return b
}
const box = (type: string, body: Buffer) => Buffer.concat([u32be(8 + body.length), latin1(type), body])
/** An ISO BMFF file (MP4, MOV, HEIF…): its ftyp box with the major and compatible brands, then media data. */
const isoBmff = (major: string, ...compatible: string[]) =>
  Buffer.concat([
    box('ftyp', Buffer.concat([latin1(major), u32be(0x200), ...compatible.map(latin1)])),
    box('free', Buffer.alloc(0)),
    box('mdat', Buffer.alloc(64, 7)),
  ])
const riff = (form: string, chunk: Buffer) =>
  Buffer.concat([latin1('RIFF'), u32le(4 + chunk.length + 100_000), latin1(form), chunk])
const oggPage = (packet: Buffer) =>
  Buffer.concat([
    latin1('OggS'),
    Buffer.from([0, 2]),
    Buffer.alloc(20),
    Buffer.from([1, packet.length]),
    packet,
    Buffer.alloc(30),
  ])
const ebml = (docType: string) =>
  Buffer.concat([
    Buffer.from([
      0x1a,
      0x45,
      0xdf,
      0xa3,
      0x80 | (19 + docType.length),
      0x42,
      0x86,
      0x81,
      1,
      0x42,
      0xf7,
      0x81,
      1,
      0x42,
      0xf2,
      0x81,
      4,
      0x42,
      0xf3,
      0x81,
      8,
      0x42,
      0x82,
      0x80 | docType.length,
    ]),
    latin1(docType),
    Buffer.from([0x42, 0x87, 0x81, 4, 0x42, 0x85, 0x81, 2]),
    Buffer.alloc(64),
  ])
/** A ustar header for one small member, its checksum computed as tar does. */
function tarOf(name: string, content: string): Buffer {
  const header = Buffer.alloc(512)
  header.write(name, 0)
  header.write('0000644\0', 100)
  header.write('0000000\0', 108)
  header.write('0000000\0', 116)
  header.write(`${Buffer.byteLength(content).toString(8).padStart(11, '0')}\0`, 124)
  header.write('00000000000\0', 136)
  header.write('        ', 148)
  header.write('0', 156)
  header.write('ustar\0' + '00', 257)
  const sum = header.reduce((total, byte) => total + byte, 0)
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
  const body = Buffer.alloc(512)
  body.write(content)
  return Buffer.concat([header, body])
}
/** A PNG with one more chunk after its IHDR, as an encoder that writes it would put it. */
function withChunkAfterHeader(png: Buffer, type: string, data: Buffer): Buffer {
  const afterHeader = 8 + 8 + 13 + 4
  const body = Buffer.concat([latin1(type), data])
  const chunk = Buffer.concat([u32be(data.length), body, u32be(crc32(body))])
  return Buffer.concat([png.subarray(0, afterHeader), chunk, png.subarray(afterHeader)])
}
const image = (format: 'png' | 'jpeg' | 'gif' | 'webp' | 'avif' | 'tiff', size = 16) =>
  sharp({ create: { width: size, height: size, channels: 3, background: '#c33' } })
    .toFormat(format)
    .toBuffer()

/** The first bytes of a file of each format, as its usual producer writes them. */
async function heads() {
  const text = (content: string) => Buffer.from(content)
  return {
    png: await image('png'),
    jpeg: await image('jpeg'),
    gif: await image('gif'),
    webp: await image('webp'),
    avif: await image('avif'),
    tiff: await image('tiff'),
    // An animated PNG: the acTL chunk announces its frames before the first image data.
    apng: withChunkAfterHeader(await image('png'), 'acTL', Buffer.from([0, 0, 0, 2, 0, 0, 0, 0])),
    // A Canon raw: a TIFF whose header goes on with "CR" and the format's version.
    cr2: Buffer.concat([
      latin1('II*\0'),
      u32le(16),
      latin1('CR'),
      Buffer.from([2, 0]),
      u32le(0),
      u32le(0),
      Buffer.alloc(200),
    ]),
    // Uncompressed, so that the directory libtiff writes after the pixels lies beyond the first 4 KiB.
    'tiff, directory after the pixels': await sharp({
      create: { width: 400, height: 400, channels: 3, background: '#c33' },
    })
      .tiff({ compression: 'none' })
      .toBuffer(),
    heic: isoBmff('heic', 'mif1', 'heic'),
    'heif (mif1)': isoBmff('mif1', 'mif1', 'heic'),
    'heif sequence (msf1)': isoBmff('msf1', 'msf1'),
    'heic sequence (hevc)': isoBmff('hevc', 'msf1', 'hevc'),
    mp4: isoBmff('isom', 'isom', 'iso2', 'avc1', 'mp41'),
    'mp4 (mp42)': isoBmff('mp42', 'isom', 'mp42'),
    m4a: isoBmff('M4A ', 'M4A ', 'mp42', 'isom'),
    m4v: isoBmff('M4V ', 'M4V ', 'mp42'),
    mov: isoBmff('qt  ', 'qt  '),
    '3gp': isoBmff('3gp4', '3gp4', 'isom'),
    'mov without ftyp': box('moov', Buffer.alloc(64)),
    avi: riff('AVI ', Buffer.concat([latin1('LIST'), u32le(200), latin1('hdrlavih'), Buffer.alloc(64)])),
    wav: riff(
      'WAVE',
      Buffer.concat([
        latin1('fmt '),
        u32le(16),
        Buffer.from([1, 0, 1, 0, 0x44, 0xac, 0, 0, 0x88, 0x58, 1, 0, 2, 0, 16, 0]),
        latin1('data'),
        u32le(1000),
        Buffer.alloc(1000),
      ]),
    ),
    'mp3 with ID3': Buffer.concat([
      latin1('ID3'),
      Buffer.from([4, 0, 0, 0, 0, 0x0a, 0]),
      Buffer.alloc(0x500),
      Buffer.from([0xff, 0xfb, 0x90, 0x64]),
      Buffer.alloc(400),
    ]),
    'mp3 with an ID3 tag longer than the head': Buffer.concat([
      latin1('ID3'),
      Buffer.from([3, 0, 0, 0, 1, 0, 0]),
      Buffer.alloc(8000),
    ]),
    // A 4000-byte tag whose padding runs to the end of the head: file-type finds no frame after it.
    'mp3 with ID3, frames beyond the head': Buffer.concat([
      latin1('ID3'),
      Buffer.from([4, 0, 0, 0, 0, 0x1f, 0x20]),
      Buffer.alloc(5000),
    ]),
    mp3: Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(400)]),
    'ogg vorbis': oggPage(Buffer.concat([Buffer.from([1]), latin1('vorbis'), Buffer.alloc(23)])),
    'ogg opus': oggPage(Buffer.concat([latin1('OpusHead'), Buffer.alloc(11)])),
    'ogg theora': oggPage(Buffer.concat([Buffer.from([0x80]), latin1('theora'), Buffer.alloc(35)])),
    flac: Buffer.concat([latin1('fLaC'), Buffer.from([0x80, 0, 0, 0x22]), Buffer.alloc(0x22)]),
    webm: ebml('webm'),
    mkv: ebml('matroska'),
    pdf: text('%PDF-1.7\n1 0 obj\n<<>>\nendobj\n'),
    'pdf with a binary comment': Buffer.concat([
      latin1('%PDF-1.4\n%'),
      Buffer.from([0xe2, 0xe3, 0xcf, 0xd3]),
      latin1('\n1 0 obj\n'),
    ]),
    zip: zipOf([
      ['notes.txt', 'Hello\n'.repeat(50)],
      ['more.txt', 'More\n'.repeat(50)],
    ]),
    docx: zipOf([
      ['[Content_Types].xml', OOXML_TYPES('wordprocessingml.document', '/word/document.xml')],
      ['_rels/.rels', RELS],
      ['word/document.xml', `<w:document><w:body>${manyParagraphs}</w:body></w:document>`],
    ]),
    // LibreOffice writes [Content_Types].xml last, far beyond the head.
    'docx, content types last': zipOf([
      ['_rels/.rels', RELS],
      ['word/document.xml', `<w:document><w:body>${manyParagraphs}</w:body></w:document>`],
      ['[Content_Types].xml', OOXML_TYPES('wordprocessingml.document', '/word/document.xml')],
    ]),
    xlsx: zipOf([
      ['[Content_Types].xml', OOXML_TYPES('spreadsheetml.sheet', '/xl/workbook.xml')],
      ['_rels/.rels', RELS],
      ['xl/workbook.xml', '<workbook/>'],
    ]),
    odt: zipOf([
      ['mimetype', 'application/vnd.oasis.opendocument.text', 'stored'],
      ['content.xml', '<office:document-content/>'],
    ]),
    jar: zipOf([['META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\n']]),
    // The header of a compound file (legacy .doc, .xls, .ppt, .msg): signature, version 3, 512-byte sectors.
    cfb: Buffer.concat([
      Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
      Buffer.alloc(16),
      Buffer.from([0x3e, 0, 3, 0, 0xfe, 0xff, 9, 0, 6, 0]),
      Buffer.alloc(486, 0xff),
    ]),
    gzip: gzipSync(text('line\n'.repeat(2000))),
    'tar.gz': gzipSync(tarOf('notes.txt', 'Hello\n')),
    tar: tarOf('notes.txt', 'Hello\n'),
    '7z': Buffer.concat([Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]), Buffer.alloc(24, 1)]),
    rar4: Buffer.concat([
      latin1('Rar!\x1a\x07\x00'),
      Buffer.from([0xcf, 0x90, 0x73, 0, 0, 0x0d, 0]),
      Buffer.alloc(20),
    ]),
    rar5: Buffer.concat([latin1('Rar!\x1a\x07\x01\x00'), Buffer.alloc(20, 3)]),
    // The header SQLite writes: magic, 4096-byte pages, file format 1, then the schema page.
    sqlite: Buffer.concat([
      latin1('SQLite format 3\0'),
      Buffer.from([0x10, 0, 1, 1, 0, 0x40, 0x20, 0x20]),
      Buffer.alloc(76),
      Buffer.alloc(100, 0x0d),
    ]),
    elf: Buffer.concat([
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]),
      Buffer.alloc(8),
      Buffer.from([3, 0, 0x3e, 0, 1, 0, 0, 0]),
      Buffer.alloc(40),
    ]),
    exe: Buffer.concat([
      latin1('MZ'),
      Buffer.from([0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff]),
      Buffer.alloc(100),
    ]),
    bmp: Buffer.concat([
      latin1('BM'),
      u32le(70),
      u32le(0),
      u32le(54),
      u32le(40),
      u32le(2),
      u32le(2),
      Buffer.from([1, 0, 24, 0]),
      Buffer.alloc(40),
    ]),
    ico: Buffer.concat([
      Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0]),
      u32le(1128),
      u32le(22),
      Buffer.alloc(64),
    ]),
    woff: Buffer.concat([latin1('wOFF'), Buffer.from([0, 1, 0, 0]), Buffer.alloc(40)]),
    woff2: Buffer.concat([latin1('wOF2'), Buffer.from([0, 1, 0, 0]), Buffer.alloc(40)]),
    xml: text('<?xml version="1.0" encoding="UTF-8"?>\n<note><to>Ann</to></note>\n'),
    'xml in UTF-16': Buffer.from('\ufeff<?xml version="1.0"?><a/>', 'utf16le'),
    svg: text(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n',
    ),
    'svg with an xml declaration': text(
      '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>\n',
    ),
    html: text('<html><script>alert(1)</script></html>'),
    text: text('Hello, world.\nA plain note.\n'),
    'text with a BOM': text('\ufeffHello\n'),
    'text in UTF-8': text('Grüße, 世界 🌍\n'),
    json: text('{"a": [1, 2, 3]}\n'),
    rtf: text('{\\rtf1\\ansi hello}'),
    postscript: text('%!PS-Adobe-3.0\n%%Title: x\n'),
    vcard: text('BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n'),
    'text beginning GIF': text('GIFs are fun\n'),
    // The six bytes of a GIF's header and nothing more, as tests and truncated files send: all of it is text.
    'GIF header alone': text('GIF89a'),
    'text beginning BM': text('BMW 320i, 2019\n'),
    'text beginning SQLi': text('SQLite is a database\n'),
    'text beginning FORM': text('FORM 1040 notes\n'),
    'text beginning MZ': text('MZ is a label\n'),
    'text beginning solid': text('solid state drives\n'),
    'text beginning ID3': text('ID3 tags explained\n'),
    'text with G at 0 and 188': text(`G${'x'.repeat(187)}G${'y'.repeat(40)}\n`),
    'unknown binary': Buffer.from(
      '009f3a71c2e4b5d6a7081929a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7',
      'hex',
    ),
    empty: Buffer.alloc(0),
  }
}

type Sample = keyof Awaited<ReturnType<typeof heads>>

/**
 * [the bytes, the declared type, the type stored]: the declared type, the detected one, or the declared one kept.
 * Recorded from the hand-written signatures that file-type replaced; a row where file-type's answer differs
 * says what was stored before and why file-type is right.
 */
const CASES: [Sample, string, string][] = [
  ['png', 'application/octet-stream', 'image/png'],
  ['png', 'image/png', 'image/png'],
  ['png', 'image/jpeg', 'image/png'],
  ['jpeg', 'application/octet-stream', 'image/jpeg'],
  ['jpeg', 'image/jpeg', 'image/jpeg'],
  ['jpeg', 'image/jpg', 'image/jpg'],
  ['jpeg', 'image/png', 'image/jpeg'],
  ['gif', 'application/octet-stream', 'image/gif'],
  ['gif', 'image/gif', 'image/gif'],
  ['gif', 'image/png', 'image/gif'],
  ['webp', 'application/octet-stream', 'image/webp'],
  ['webp', 'image/webp', 'image/webp'],
  ['webp', 'image/png', 'image/webp'],
  ['avif', 'application/octet-stream', 'image/avif'],
  ['avif', 'image/avif', 'image/avif'],
  ['avif', 'image/png', 'image/avif'],
  ['tiff', 'application/octet-stream', 'image/tiff'],
  ['tiff', 'image/tiff', 'image/tiff'],
  ['tiff', 'image/png', 'image/tiff'],
  // Was image/png: file-type finds the acTL chunk of an animated PNG.
  ['apng', 'application/octet-stream', 'image/apng'],
  // Was image/png: file-type finds the acTL chunk of an animated PNG.
  ['apng', 'image/apng', 'image/apng'],
  ['apng', 'image/png', 'image/png'],
  // Was image/png: file-type finds the acTL chunk of an animated PNG.
  ['apng', 'image/jpeg', 'image/apng'],
  // Was image/tiff: file-type tells a Canon raw from a plain TIFF.
  ['cr2', 'application/octet-stream', 'image/x-canon-cr2'],
  // Was image/tiff: file-type tells a Canon raw from a plain TIFF.
  ['cr2', 'image/x-canon-cr2', 'image/x-canon-cr2'],
  ['cr2', 'image/tiff', 'image/tiff'],
  // Was image/tiff: file-type tells a Canon raw from a plain TIFF.
  ['cr2', 'image/png', 'image/x-canon-cr2'],
  ['tiff, directory after the pixels', 'application/octet-stream', 'image/tiff'],
  ['tiff, directory after the pixels', 'image/tiff', 'image/tiff'],
  ['tiff, directory after the pixels', 'image/png', 'image/tiff'],
  ['heic', 'application/octet-stream', 'image/heic'],
  ['heic', 'image/heic', 'image/heic'],
  ['heic', 'image/heif', 'image/heif'],
  ['heic', 'image/png', 'image/heic'],
  ['heif (mif1)', 'application/octet-stream', 'image/heif'],
  ['heif (mif1)', 'image/heif', 'image/heif'],
  ['heif (mif1)', 'image/png', 'image/heif'],
  // Was image/heif: msf1 is the brand of an image sequence.
  ['heif sequence (msf1)', 'application/octet-stream', 'image/heif-sequence'],
  ['heif sequence (msf1)', 'image/heif-sequence', 'image/heif-sequence'],
  // Was image/heif: msf1 is the brand of an image sequence.
  ['heif sequence (msf1)', 'image/png', 'image/heif-sequence'],
  // Was video/mp4: hevc is the brand of a HEIC sequence, not an MP4.
  ['heic sequence (hevc)', 'application/octet-stream', 'image/heic-sequence'],
  // Was video/mp4: hevc is the brand of a HEIC sequence, not an MP4.
  ['heic sequence (hevc)', 'image/heic-sequence', 'image/heic-sequence'],
  // Was video/mp4: hevc is the brand of a HEIC sequence, not an MP4.
  ['heic sequence (hevc)', 'image/png', 'image/heic-sequence'],
  ['mp4', 'application/octet-stream', 'video/mp4'],
  ['mp4', 'video/mp4', 'video/mp4'],
  ['mp4', 'image/png', 'video/mp4'],
  ['mp4 (mp42)', 'application/octet-stream', 'video/mp4'],
  ['mp4 (mp42)', 'video/mp4', 'video/mp4'],
  ['mp4 (mp42)', 'image/png', 'video/mp4'],
  ['m4a', 'application/octet-stream', 'audio/mp4'],
  ['m4a', 'audio/mp4', 'audio/mp4'],
  ['m4a', 'audio/x-m4a', 'audio/x-m4a'],
  ['m4a', 'video/mp4', 'video/mp4'],
  ['m4a', 'image/png', 'audio/mp4'],
  ['m4v', 'application/octet-stream', 'video/mp4'],
  ['m4v', 'video/x-m4v', 'video/x-m4v'],
  ['m4v', 'image/png', 'video/mp4'],
  ['mov', 'application/octet-stream', 'video/quicktime'],
  ['mov', 'video/quicktime', 'video/quicktime'],
  ['mov', 'image/png', 'video/quicktime'],
  // Was video/mp4: 3GPP has its own registered type.
  ['3gp', 'application/octet-stream', 'video/3gpp'],
  ['3gp', 'video/3gpp', 'video/3gpp'],
  // Was video/mp4: 3GPP has its own registered type.
  ['3gp', 'image/png', 'video/3gpp'],
  // Was application/octet-stream: file-type knows the QuickTime files that begin with a moov, mdat, free or wide atom.
  ['mov without ftyp', 'application/octet-stream', 'video/quicktime'],
  ['mov without ftyp', 'video/quicktime', 'video/quicktime'],
  // Was image/png: file-type knows the QuickTime files that begin with a moov, mdat, free or wide atom.
  ['mov without ftyp', 'image/png', 'video/quicktime'],
  ['avi', 'application/octet-stream', 'video/x-msvideo'],
  ['avi', 'video/x-msvideo', 'video/x-msvideo'],
  ['avi', 'video/vnd.avi', 'video/x-msvideo'],
  ['avi', 'image/png', 'video/x-msvideo'],
  ['wav', 'application/octet-stream', 'audio/wav'],
  ['wav', 'audio/wav', 'audio/wav'],
  ['wav', 'audio/x-wav', 'audio/x-wav'],
  ['wav', 'image/png', 'audio/wav'],
  ['mp3 with ID3', 'application/octet-stream', 'audio/mpeg'],
  ['mp3 with ID3', 'audio/mpeg', 'audio/mpeg'],
  ['mp3 with ID3', 'image/png', 'audio/mpeg'],
  ['mp3 with an ID3 tag longer than the head', 'application/octet-stream', 'audio/mpeg'],
  ['mp3 with an ID3 tag longer than the head', 'audio/mpeg', 'audio/mpeg'],
  ['mp3 with an ID3 tag longer than the head', 'image/png', 'audio/mpeg'],
  ['mp3 with ID3, frames beyond the head', 'application/octet-stream', 'audio/mpeg'],
  ['mp3 with ID3, frames beyond the head', 'audio/mpeg', 'audio/mpeg'],
  ['mp3 with ID3, frames beyond the head', 'image/png', 'audio/mpeg'],
  ['mp3', 'application/octet-stream', 'audio/mpeg'],
  ['mp3', 'audio/mpeg', 'audio/mpeg'],
  ['mp3', 'image/png', 'audio/mpeg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg vorbis', 'application/octet-stream', 'audio/ogg'],
  ['ogg vorbis', 'audio/ogg', 'audio/ogg'],
  ['ogg vorbis', 'application/ogg', 'application/ogg'],
  ['ogg vorbis', 'video/ogg', 'video/ogg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg vorbis', 'image/png', 'audio/ogg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg opus', 'application/octet-stream', 'audio/ogg'],
  ['ogg opus', 'audio/ogg', 'audio/ogg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg opus', 'image/png', 'audio/ogg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg theora', 'application/octet-stream', 'video/ogg'],
  ['ogg theora', 'video/ogg', 'video/ogg'],
  // Was application/ogg: file-type reads the codec of the first packet (RFC 5334).
  ['ogg theora', 'image/png', 'video/ogg'],
  ['flac', 'application/octet-stream', 'audio/flac'],
  ['flac', 'audio/flac', 'audio/flac'],
  ['flac', 'image/png', 'audio/flac'],
  ['webm', 'application/octet-stream', 'video/webm'],
  ['webm', 'video/webm', 'video/webm'],
  ['webm', 'image/png', 'video/webm'],
  // Was video/webm: file-type reads the EBML DocType: Matroska has its own type (RFC 9559).
  ['mkv', 'application/octet-stream', 'video/matroska'],
  ['mkv', 'video/x-matroska', 'video/x-matroska'],
  ['mkv', 'video/webm', 'video/webm'],
  // Was video/webm: file-type reads the EBML DocType: Matroska has its own type (RFC 9559).
  ['mkv', 'image/png', 'video/matroska'],
  ['pdf', 'application/octet-stream', 'application/pdf'],
  ['pdf', 'application/pdf', 'application/pdf'],
  ['pdf', 'image/png', 'application/pdf'],
  ['pdf with a binary comment', 'application/octet-stream', 'application/pdf'],
  ['pdf with a binary comment', 'application/pdf', 'application/pdf'],
  ['pdf with a binary comment', 'image/png', 'application/pdf'],
  ['zip', 'application/octet-stream', 'application/zip'],
  ['zip', 'application/zip', 'application/zip'],
  ['zip', 'application/x-zip-compressed', 'application/x-zip-compressed'],
  ['zip', 'image/png', 'application/zip'],
  // Was application/zip: file-type names the document by its first ZIP entries.
  [
    'docx',
    'application/octet-stream',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ],
  [
    'docx',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ],
  ['docx', 'application/zip', 'application/zip'],
  [
    'docx',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ],
  // Was application/zip: file-type names the document by its first ZIP entries.
  ['docx', 'image/png', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  // Was application/zip: file-type names the document by its first ZIP entries.
  [
    'docx, content types last',
    'application/octet-stream',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ],
  [
    'docx, content types last',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ],
  // Was application/zip: file-type names the document by its first ZIP entries.
  [
    'docx, content types last',
    'image/png',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ],
  // Was application/zip: file-type names the document by its first ZIP entries.
  ['xlsx', 'application/octet-stream', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  [
    'xlsx',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ],
  // Was application/zip: file-type names the document by its first ZIP entries.
  ['xlsx', 'image/png', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  // Was application/zip: file-type names the document by its first ZIP entries.
  ['odt', 'application/octet-stream', 'application/vnd.oasis.opendocument.text'],
  ['odt', 'application/vnd.oasis.opendocument.text', 'application/vnd.oasis.opendocument.text'],
  // Was application/zip: file-type names the document by its first ZIP entries.
  ['odt', 'image/png', 'application/vnd.oasis.opendocument.text'],
  // Was application/zip: file-type names the archive by its first ZIP entries.
  ['jar', 'application/octet-stream', 'application/java-archive'],
  ['jar', 'application/java-archive', 'application/java-archive'],
  // Was application/zip: file-type names the archive by its first ZIP entries.
  ['jar', 'image/png', 'application/java-archive'],
  // Was application/octet-stream: file-type knows the compound file signature; a declared legacy Office type stays.
  ['cfb', 'application/octet-stream', 'application/x-cfb'],
  ['cfb', 'application/vnd.ms-excel', 'application/vnd.ms-excel'],
  ['cfb', 'application/msword', 'application/msword'],
  ['cfb', 'application/vnd.ms-powerpoint', 'application/vnd.ms-powerpoint'],
  // Was image/png: file-type knows the compound file signature; a declared legacy Office type stays.
  ['cfb', 'image/png', 'application/x-cfb'],
  ['gzip', 'application/octet-stream', 'application/gzip'],
  ['gzip', 'application/gzip', 'application/gzip'],
  ['gzip', 'image/png', 'application/gzip'],
  ['tar.gz', 'application/octet-stream', 'application/gzip'],
  ['tar.gz', 'application/gzip', 'application/gzip'],
  ['tar.gz', 'image/png', 'application/gzip'],
  // Was application/octet-stream: file-type knows the ustar header.
  ['tar', 'application/octet-stream', 'application/x-tar'],
  ['tar', 'application/x-tar', 'application/x-tar'],
  // Was image/png: file-type knows the ustar header.
  ['tar', 'image/png', 'application/x-tar'],
  ['7z', 'application/octet-stream', 'application/x-7z-compressed'],
  ['7z', 'application/x-7z-compressed', 'application/x-7z-compressed'],
  ['7z', 'image/png', 'application/x-7z-compressed'],
  ['rar4', 'application/octet-stream', 'application/vnd.rar'],
  ['rar4', 'application/vnd.rar', 'application/vnd.rar'],
  ['rar4', 'application/x-rar-compressed', 'application/vnd.rar'],
  ['rar4', 'image/png', 'application/vnd.rar'],
  ['rar5', 'application/octet-stream', 'application/vnd.rar'],
  ['rar5', 'application/vnd.rar', 'application/vnd.rar'],
  ['rar5', 'image/png', 'application/vnd.rar'],
  ['sqlite', 'application/octet-stream', 'application/vnd.sqlite3'],
  ['sqlite', 'application/vnd.sqlite3', 'application/vnd.sqlite3'],
  ['sqlite', 'application/x-sqlite3', 'application/vnd.sqlite3'],
  ['sqlite', 'image/png', 'application/vnd.sqlite3'],
  ['elf', 'application/octet-stream', 'application/x-elf'],
  ['elf', 'application/x-elf', 'application/x-elf'],
  ['elf', 'image/png', 'application/x-elf'],
  // Was application/octet-stream: file-type knows the MZ header.
  ['exe', 'application/octet-stream', 'application/x-msdownload'],
  ['exe', 'application/vnd.microsoft.portable-executable', 'application/vnd.microsoft.portable-executable'],
  ['exe', 'application/x-msdownload', 'application/x-msdownload'],
  // Was image/png: file-type knows the MZ header.
  ['exe', 'image/png', 'application/x-msdownload'],
  ['bmp', 'application/octet-stream', 'image/bmp'],
  ['bmp', 'image/bmp', 'image/bmp'],
  ['bmp', 'image/png', 'image/bmp'],
  ['ico', 'application/octet-stream', 'image/x-icon'],
  ['ico', 'image/x-icon', 'image/x-icon'],
  ['ico', 'image/png', 'image/x-icon'],
  ['woff', 'application/octet-stream', 'font/woff'],
  ['woff', 'font/woff', 'font/woff'],
  ['woff', 'image/png', 'font/woff'],
  ['woff2', 'application/octet-stream', 'font/woff2'],
  ['woff2', 'font/woff2', 'font/woff2'],
  ['woff2', 'image/png', 'font/woff2'],
  ['xml', 'application/octet-stream', 'text/plain'],
  ['xml', 'application/xml', 'application/xml'],
  ['xml', 'image/png', 'text/plain'],
  // Was application/octet-stream: file-type reads an XML declaration in UTF-16.
  ['xml in UTF-16', 'application/octet-stream', 'application/xml'],
  ['xml in UTF-16', 'application/xml', 'application/xml'],
  // Was image/png: file-type reads an XML declaration in UTF-16.
  ['xml in UTF-16', 'image/png', 'application/xml'],
  ['svg', 'application/octet-stream', 'text/plain'],
  ['svg', 'image/svg+xml', 'image/svg+xml'],
  ['svg', 'image/png', 'text/plain'],
  ['svg with an xml declaration', 'application/octet-stream', 'text/plain'],
  ['svg with an xml declaration', 'image/svg+xml', 'image/svg+xml'],
  ['svg with an xml declaration', 'image/png', 'text/plain'],
  ['html', 'application/octet-stream', 'text/plain'],
  ['html', 'text/html', 'text/html'],
  ['html', 'image/png', 'text/plain'],
  ['text', 'application/octet-stream', 'text/plain'],
  ['text', 'text/plain', 'text/plain'],
  ['text', 'image/png', 'text/plain'],
  ['text with a BOM', 'application/octet-stream', 'text/plain'],
  ['text with a BOM', 'text/plain', 'text/plain'],
  ['text with a BOM', 'image/png', 'text/plain'],
  ['text in UTF-8', 'application/octet-stream', 'text/plain'],
  ['text in UTF-8', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8'],
  ['text in UTF-8', 'image/png', 'text/plain'],
  ['json', 'application/octet-stream', 'text/plain'],
  ['json', 'application/json', 'application/json'],
  ['json', 'image/png', 'text/plain'],
  ['rtf', 'application/octet-stream', 'text/plain'],
  ['rtf', 'application/rtf', 'application/rtf'],
  ['rtf', 'image/png', 'text/plain'],
  ['postscript', 'application/octet-stream', 'text/plain'],
  ['postscript', 'application/postscript', 'application/postscript'],
  ['postscript', 'image/png', 'text/plain'],
  ['vcard', 'application/octet-stream', 'text/plain'],
  ['vcard', 'text/vcard', 'text/vcard'],
  ['vcard', 'image/png', 'text/plain'],
  ['GIF header alone', 'application/octet-stream', 'image/gif'],
  ['GIF header alone', 'image/gif', 'image/gif'],
  ['text beginning GIF', 'application/octet-stream', 'text/plain'],
  ['text beginning GIF', 'text/plain', 'text/plain'],
  ['text beginning GIF', 'image/png', 'text/plain'],
  ['text beginning BM', 'application/octet-stream', 'text/plain'],
  ['text beginning BM', 'text/csv', 'text/csv'],
  ['text beginning BM', 'image/png', 'text/plain'],
  ['text beginning SQLi', 'application/octet-stream', 'text/plain'],
  ['text beginning SQLi', 'text/markdown', 'text/markdown'],
  ['text beginning SQLi', 'image/png', 'text/plain'],
  ['text beginning FORM', 'application/octet-stream', 'text/plain'],
  ['text beginning FORM', 'text/plain', 'text/plain'],
  ['text beginning FORM', 'image/png', 'text/plain'],
  ['text beginning MZ', 'application/octet-stream', 'text/plain'],
  ['text beginning MZ', 'text/plain', 'text/plain'],
  ['text beginning MZ', 'image/png', 'text/plain'],
  ['text beginning solid', 'application/octet-stream', 'text/plain'],
  ['text beginning solid', 'text/plain', 'text/plain'],
  ['text beginning solid', 'image/png', 'text/plain'],
  // Was audio/mpeg: a head of text is text: the three letters alone made it an MP3.
  ['text beginning ID3', 'application/octet-stream', 'text/plain'],
  // Was audio/mpeg: a head of text is text: the three letters alone made it an MP3.
  ['text beginning ID3', 'text/plain', 'text/plain'],
  // Was audio/mpeg: a head of text is text: the three letters alone made it an MP3.
  ['text beginning ID3', 'image/png', 'text/plain'],
  ['text with G at 0 and 188', 'application/octet-stream', 'text/plain'],
  ['text with G at 0 and 188', 'text/plain', 'text/plain'],
  ['text with G at 0 and 188', 'image/png', 'text/plain'],
  ['unknown binary', 'application/octet-stream', 'application/octet-stream'],
  ['unknown binary', 'application/x-custom', 'application/x-custom'],
  ['unknown binary', 'image/png', 'image/png'],
  ['empty', 'application/octet-stream', 'application/octet-stream'],
  ['empty', 'text/plain', 'text/plain'],
  ['empty', 'image/png', 'image/png'],
]

/** The samples whose detected type makes processing render a preview. */
const PREVIEWED: Sample[] = [
  'png',
  'jpeg',
  'gif',
  'webp',
  'avif',
  'tiff',
  'apng',
  'cr2',
  'tiff, directory after the pixels',
  // A preview is tried (and fails without harm, as before): the bytes say GIF.
  'GIF header alone',
]

describe('the type an upload is stored with, from its declared type and its first bytes', async () => {
  const samples = await heads()
  const detectedIn = (sample: Sample) => detectType(samples[sample].subarray(0, SNIFF_BYTES))

  for (const sample of new Set(CASES.map(([sample]) => sample))) {
    test(sample, async () => {
      const detected = await detectedIn(sample)
      for (const [, declared, stored] of CASES.filter(([each]) => each === sample)) {
        assert.equal(chooseContentType(declared, detected), stored, `declared ${declared}`)
      }
    })
  }

  test('a preview for the images sharp reads, and for nothing else', async () => {
    const previewed: Sample[] = []
    for (const sample of Object.keys(samples) as Sample[]) {
      const detected = await detectedIn(sample)
      if (detected !== undefined && PREVIEWABLE.has(detected)) previewed.push(sample)
    }
    assert.deepEqual(previewed, PREVIEWED)
  })
})
