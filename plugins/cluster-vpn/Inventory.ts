/**
 * The VPN profile inventory (research-jobs spec, "Geographic filter"): `.ovpn` files named
 * `<country>-<state>-<n>.<provider>.udp.ovpn` (a Tor-exit profile ends its first part in `-tor`:
 * `us-tx-003-tor.mullvad.udp.ovpn`), read from one folder, indexed by country and state so a
 * filter selects by prefix without scanning: `us` → `us-*`, `us:ca` → `us-ca-*`,
 * `us:tx:tor` → `us-tx-*-tor`, `us:tor` → `us-*-*-tor`.
 *
 * `generateInventory` writes a realistic test inventory (the spec's scale: 12,909 profiles over
 * 127 countries, every US state) with a seeded generator, so every machine gets the same files.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type GeoFilter, parseGeo } from "../jobs/Contract.ts"

/** One profile file. */
export interface Profile {
  /** File name, e.g. `us-ca-007.nordvpn.udp.ovpn`; what a bank's `vpn_profile` shows. */
  readonly file: string
  readonly country: string
  readonly state: string
  readonly n: number
  readonly tor: boolean
  readonly provider: string
}

const NAME = /^([a-z]{2,3})-([a-z0-9]{2,3})-(\d{1,5})(-tor)?\.([a-z0-9-]+)\.udp\.ovpn$/

/** Parses a profile file name; `null` when it is not `<country>-<state>-<n>[-tor].<provider>.udp.ovpn`. */
export const parseProfileName = (file: string): Profile | null => {
  const m = NAME.exec(file)
  if (!m) return null
  return { file, country: m[1]!, state: m[2]!, n: Number(m[3]), tor: m[4] !== undefined, provider: m[5]! }
}

/** Profiles indexed for prefix selection. */
export interface Inventory {
  readonly dir: string
  readonly size: number
  readonly countries: ReadonlyArray<string>
  /** Profiles selected by a filter (`us`, `us:ca`, `us:tx:tor`), in file-name order. */
  readonly select: (filter: GeoFilter) => ReadonlyArray<Profile>
  /** The profile of that file name, if present. */
  readonly get: (file: string) => Profile | undefined
}

/** Indexes `profiles` (any order). */
export const indexProfiles = (dir: string, profiles: ReadonlyArray<Profile>): Inventory => {
  const sorted = [...profiles].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
  const byCountry = new Map<string, Array<Profile>>()
  const byState = new Map<string, Array<Profile>>()
  const byFile = new Map<string, Profile>()
  for (const p of sorted) {
    byFile.set(p.file, p)
    ;(byCountry.get(p.country) ?? byCountry.set(p.country, []).get(p.country)!).push(p)
    const k = `${p.country}:${p.state}`
    ;(byState.get(k) ?? byState.set(k, []).get(k)!).push(p)
  }
  const torOnly = new Map<string, ReadonlyArray<Profile>>()
  return {
    dir,
    size: sorted.length,
    countries: [...byCountry.keys()].sort(),
    get: (file) => byFile.get(file),
    select: (f) => {
      if (f.tor || f.country === null) return []
      const key = f.state === null ? f.country : `${f.country}:${f.state}`
      const base = (f.state === null ? byCountry.get(f.country) : byState.get(key)) ?? []
      if (f.type !== "tor") return base
      // The tor subset is asked for repeatedly by routes: computed once per key.
      let t = torOnly.get(key)
      if (!t) torOnly.set(key, (t = base.filter((p) => p.tor)))
      return t
    }
  }
}

/**
 * Reads every profile file of `dir` (other names are skipped: README, keys). Throws the
 * file-system error when `dir` cannot be read.
 */
export const loadInventory = (dir: string): Inventory => {
  const profiles: Array<Profile> = []
  for (const f of fs.readdirSync(dir)) {
    const p = parseProfileName(f)
    if (p) profiles.push(p)
  }
  return indexProfiles(dir, profiles)
}

/** Selects by a filter string; `null` when the string is not a bank filter (`tor`, empty, malformed). */
export const selectByString = (inv: Inventory, filter: string): { filter: GeoFilter; profiles: ReadonlyArray<Profile> } | null => {
  let f: GeoFilter | null
  try {
    f = parseGeo(filter)
  } catch {
    return null
  }
  if (f === null || f.tor) return null
  return { filter: f, profiles: inv.select(f) }
}

// --- generator -------------------------------------------------------------------------------

const US_STATES = "al ak az ar ca co ct de dc fl ga hi id il in ia ks ky la me md ma mi mn ms mo mt ne nv nh nj nm ny nc nd oh ok or pa ri sc sd tn tx ut vt va wa wv wi wy".split(" ")
/** 126 more ISO 3166 country codes: with `us`, the spec's 127 countries. */
const COUNTRIES = (
  "ca mx br ar cl co pe ve ec uy py bo cr pa gt hn sv ni do jm gb ie fr de nl be lu ch at it es pt dk no se fi is pl cz sk hu ro bg gr hr si rs ba me mk al ee lv lt ua md by tr cy mt " +
  "ru ge am az kz uz kg in pk bd lk np jp kr cn hk tw mo sg my th vn ph id kh la mm mn au nz fj pg il ae sa qa kw bh om jo lb eg ma tn dz za ng ke gh et tz ug rw sn ci cm ao mz zm zw bw na mu ir iq tt"
).split(" ")
const PROVIDERS = ["nordvpn", "surfshark", "mullvad", "protonvpn", "pia", "expressvpn"]
/** The spec's inventory size. */
export const SPEC_PROFILES = 12_909

/** mulberry32: a small seeded PRNG, so the generated inventory is the same everywhere. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/**
 * The file names of a generated inventory of `total` profiles (default 12,909) over 127
 * countries: about a third in the US spread over its 51 state codes, the rest weighted towards
 * large VPN markets; 2 to 6 region codes per other country; about 4% Tor-exit profiles.
 */
export const generatedNames = (total = SPEC_PROFILES, seed = 15): Array<string> => {
  const rand = rng(seed)
  const regions = new Map<string, Array<string>>([["us", US_STATES]])
  const letters = "abcdefghijklmnopqrstuvwxyz"
  for (const c of COUNTRIES) {
    const k = 2 + Math.floor(rand() * 5)
    const set = new Set<string>()
    while (set.size < k) set.add(letters[Math.floor(rand() * 26)]! + letters[Math.floor(rand() * 26)]!)
    regions.set(c, [...set].sort())
  }
  // Weights: US a third of the whole, then a long tail (Zipf-like by list position).
  const weights = new Map<string, number>([["us", 0.34]])
  const tail = COUNTRIES.map((_, i) => 1 / (i + 3))
  const tailSum = tail.reduce((a, b) => a + b, 0)
  COUNTRIES.forEach((c, i) => weights.set(c, (0.66 * tail[i]!) / tailSum))
  const all = ["us", ...COUNTRIES]
  const counts = all.map((c) => Math.max(total >= all.length ? 1 : 0, Math.floor(weights.get(c)! * total)))
  let left = total - counts.reduce((a, b) => a + b, 0)
  for (let i = 0; left !== 0; i = (i + 1) % counts.length) {
    if (left > 0) (counts[i]! += 1), (left -= 1)
    else if (counts[i]! > 1) (counts[i]! -= 1), (left += 1)
  }
  const names: Array<string> = []
  all.forEach((country, ci) => {
    const rs = regions.get(country)!
    const next = new Map<string, number>()
    for (let i = 0; i < counts[ci]!; i++) {
      const state = rs[i % rs.length]!
      const n = (next.get(state) ?? 0) + 1
      next.set(state, n)
      const tor = rand() < 0.04 ? "-tor" : ""
      names.push(`${country}-${state}-${String(n).padStart(3, "0")}${tor}.${PROVIDERS[Math.floor(rand() * PROVIDERS.length)]}.udp.ovpn`)
    }
  })
  return names
}

/** The text of one generated profile: a complete OpenVPN client config without key material. */
const profileText = (p: Profile): string =>
  [
    "# generated test profile (platform cluster-vpn): a realistic OpenVPN client config, no keys",
    "client",
    "dev tun",
    "proto udp",
    `remote ${p.country}-${p.state}-${p.n}.${p.provider}.vpn.invalid 1194`,
    "resolv-retry infinite",
    "nobind",
    "persist-key",
    "persist-tun",
    "remote-cert-tls server",
    "cipher AES-256-GCM",
    "auth SHA512",
    "verb 3",
    ""
  ].join("\n")

/**
 * Writes a generated inventory of `total` profiles into `dir` (created) unless it already holds
 * profiles; returns how many files were written (0 when it held some).
 */
export const generateInventory = (dir: string, total = SPEC_PROFILES): number => {
  fs.mkdirSync(dir, { recursive: true })
  if (fs.readdirSync(dir).some((f) => NAME.test(f))) return 0
  // Written under a temporary name, then renamed: a second process never sees half an inventory.
  const tmp = fs.mkdtempSync(path.join(path.dirname(dir), ".profiles-"))
  const names = generatedNames(total)
  for (const name of names) fs.writeFileSync(path.join(tmp, name), profileText(parseProfileName(name)!))
  for (const name of names) fs.renameSync(path.join(tmp, name), path.join(dir, name))
  fs.rmSync(tmp, { recursive: true, force: true })
  return names.length
}
