// Session-key patterns: `ignoreSessionPatterns` (LCM skipped entirely) and
// `statelessSessionPatterns` (read-only: assembled and searchable, never written).
// `*` matches within one `:`-separated segment, `**` matches across segments.

/** Compiles a glob into an anchored RegExp. */
export function globToRegExp(glob) {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]
    if (c === '*') {
      if (glob[i + 1] === '*') {
        out += '.*'
        i++
      } else out += '[^:]*'
    } else if (c === '?') out += '[^:]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`)
}

/** Matches session keys against the configured patterns. */
export class SessionPolicy {
  /** @param {{ ignoreSessionPatterns: string[], statelessSessionPatterns: string[], skipStatelessSessions: boolean }} cfg */
  constructor(cfg) {
    this.ignore = cfg.ignoreSessionPatterns.map(globToRegExp)
    this.stateless = cfg.skipStatelessSessions ? cfg.statelessSessionPatterns.map(globToRegExp) : []
  }

  /** True when LCM must not touch the session at all. */
  isIgnored(sessionKey) {
    return typeof sessionKey === 'string' && this.ignore.some((r) => r.test(sessionKey.trim()))
  }

  /** True when the session may read from LCM but never writes to it. */
  isStateless(sessionKey) {
    return typeof sessionKey === 'string' && this.stateless.some((r) => r.test(sessionKey.trim()))
  }

  /** True when writes for the session are skipped (ignored or stateless). */
  skipsWrites(sessionKey) {
    return this.isIgnored(sessionKey) || this.isStateless(sessionKey)
  }
}
