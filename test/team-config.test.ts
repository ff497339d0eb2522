// The settings of a team's server (issue 45): who may sign up, from which domains, the default quota and the
// provider of single sign-on; each refused clearly when wrong.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../src/platform/config.ts'

test('defaults: invitations only, any domain, no quota, no provider', () => {
  const config = loadConfig({})
  assert.deepEqual(config.signUp, { policy: 'invite', emailDomains: undefined })
  assert.equal(config.defaultQuotaBytes, undefined)
  assert.equal(config.oidc, undefined)
})

test('SIGNUP and SIGNUP_EMAIL_DOMAINS are read, lowercased, and refused when they are not one', () => {
  assert.deepEqual(
    loadConfig({ SIGNUP: 'open', SIGNUP_EMAIL_DOMAINS: ' Example.org,@team.example.com ' }).signUp,
    {
      policy: 'open',
      emailDomains: ['example.org', 'team.example.com'],
    },
  )
  assert.equal(loadConfig({ SIGNUP: 'closed' }).signUp.policy, 'closed')
  assert.throws(() => loadConfig({ SIGNUP: 'yes' }), /SIGNUP must be invite, closed or open, got "yes"/)
  assert.throws(
    () => loadConfig({ SIGNUP_EMAIL_DOMAINS: 'example.org,not a domain' }),
    /"not a domain" is not one/,
  )
})

test('DEFAULT_QUOTA_BYTES is a whole number of bytes', () => {
  assert.equal(loadConfig({ DEFAULT_QUOTA_BYTES: '1073741824' }).defaultQuotaBytes, 1073741824)
  assert.throws(() => loadConfig({ DEFAULT_QUOTA_BYTES: '1 GB' }), ConfigError)
})

test('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET go together; SSO_ONLY needs them', () => {
  const oidc = loadConfig({
    OIDC_ISSUER: 'https://id.example.com/',
    OIDC_CLIENT_ID: 'coffer',
    OIDC_CLIENT_SECRET: 'a secret',
    SSO_ONLY: 'true',
  }).oidc
  assert.deepEqual(oidc, {
    issuer: 'https://id.example.com',
    clientId: 'coffer',
    clientSecret: 'a secret',
    name: 'id.example.com',
    only: true,
  })
  assert.equal(
    loadConfig({
      OIDC_ISSUER: 'https://id.example.com',
      OIDC_CLIENT_ID: 'c',
      OIDC_CLIENT_SECRET: 's',
      OIDC_NAME: 'Acme',
    }).oidc?.name,
    'Acme',
  )
  assert.throws(
    () => loadConfig({ OIDC_ISSUER: 'https://id.example.com' }),
    /go together: set all three, or none/,
  )
  assert.throws(() => loadConfig({ SSO_ONLY: 'true' }), /SSO_ONLY=true needs a provider/)
})
