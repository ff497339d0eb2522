// `coffer completion bash|zsh`: completion scripts made from the command tree itself, so that they offer every
// command and option there is, and nothing else.
import type { Command } from 'commander'
import { UsageError } from './output.ts'

/** Each command path ('' for the program, 'request create' for a subcommand) with its words to offer. */
function wordsByCommand(program: Command): Map<string, string[]> {
  const words = new Map<string, string[]>()
  const visit = (command: Command, path: string) => {
    const options = command.options.flatMap(
      (option) => [option.long, option.short].filter(Boolean) as string[],
    )
    words.set(path, [...command.commands.map((sub) => sub.name()), ...options, '--help'])
    for (const sub of command.commands) visit(sub, path ? `${path} ${sub.name()}` : sub.name())
  }
  visit(program, '')
  return words
}

export function completionScript(program: Command, shell: string): string {
  const words = wordsByCommand(program)
  const cases = [...words.entries()]
    .filter(([path]) => path !== '')
    .map(([path, list]) => `    "${path}") words="${list.join(' ')}" ;;`)
    .join('\n')
  const top = (words.get('') ?? []).join(' ')
  // The command path: the words typed so far that name commands (options and their values left out).
  const bash = `# bash completion for coffer (coffer completion bash)
_coffer() {
  local current="\${COMP_WORDS[COMP_CWORD]}" path="" word words
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$word" in -*) ;; *) case " $(_coffer_words "$path") " in *" $word "*) path="\${path:+$path }$word" ;; esac ;; esac
  done
  words="$(_coffer_words "$path")"
  COMPREPLY=($(compgen -W "$words" -- "$current"))
  [ \${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$current"))
}
_coffer_words() {
  local words="${top}"
  case "$1" in
${cases}
  esac
  echo "$words"
}
complete -o filenames -F _coffer coffer
`
  if (shell === 'bash') return bash
  if (shell === 'zsh') {
    return `#compdef coffer
# zsh completion for coffer (coffer completion zsh): the bash completion, through zsh's bashcompinit.
autoload -U +X bashcompinit && bashcompinit
${bash}`
  }
  throw new UsageError(`No completion for ${shell}.`, 'Choose bash or zsh.')
}
