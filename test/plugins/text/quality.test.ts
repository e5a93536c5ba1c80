/**
 * quality_filter on a realistic mix: two distinct English articles, a near-copy of the first
 * (a syndicated version with a changed figure), a stub, a page of site furniture
 * (cookie notice, menus, legal links), a link farm in Markdown and a German article. Each is
 * dropped for exactly its reason, the first of duplicates is kept, and the progress message
 * counts the reasons. The measures themselves are checked on small inputs.
 */
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import { qualityFilterOp } from "../../../plugins/text/GraphOps.ts"
import { boilerplateRatio, detectLanguage, jaccard, shingles, words } from "../../../plugins/text/Quality.ts"
import { jobContexts } from "../jobs/net/jobContext.ts"

const lighthouse = `The harbour lighthouse at Port Ellen has guided fishing boats past the Otter Rock since 1832. After two decades of neglect its lantern room leaked, its iron gallery had rusted through in places and the keeper's cottage stood empty.

This spring a volunteer trust finished a four-year restoration that returned the tower to working order. Engineers recommended repointing the whole tower with a lime mortar that lets the stone breathe, rather than the cement used in the 1970s repairs.

Inside, the original clockwork rotation mechanism was intact but seized. A retired clockmaker from Bowmore spent eleven months cleaning and re-bushing the gear train, and the lens now turns once every thirty seconds as it did in the nineteenth century. On the first night of operation more than two hundred residents gathered on the pier to watch the beam sweep across the bay, and the trust now plans guided tours of the tower during the summer months.`

const bread = `Sourdough bread depends on a living starter, a mixture of flour and water colonised by wild yeasts and lactic acid bacteria. A baker who feeds the starter at the same time each day learns to read its rhythm: it rises, domes and falls again as the yeasts exhaust their food.

The dough itself needs little kneading if it is given time. Long, cool fermentation overnight in the refrigerator develops the gluten and the sour flavour at once, and it makes the loaf easier to shape in the morning.

Bake the loaf in a covered cast iron pot for the first twenty minutes so that the steam trapped inside keeps the crust soft while the bread expands, then remove the lid and let the crust darken until it sounds hollow when tapped on the bottom.`

// The lighthouse story as a syndication partner ran it: one figure changed.
const syndicated = lighthouse.replace("two hundred residents", "three hundred residents")

const stub = "Opening hours for the lighthouse museum will be announced later this year. Check back soon for tour dates and ticket prices."

const furniture = `We use cookies to improve your experience. By continuing you accept our cookie policy.
Accept all cookies
Manage cookie preferences
Home | News | Features | Archive | Events | Shop | About
Sign in to your account or create an account to save articles
Subscribe to our newsletter for weekly updates from the coast
Share this article on Facebook, Twitter, LinkedIn, WhatsApp or by email
Follow us on social media for photographs of the harbour
Privacy policy | Terms of use | Cookie policy | Accessibility | Contact us
Copyright 2024 Coastal Heritage Review Ltd. All rights reserved.
Registered office: 4 Pier Road, Port Ellen. Company number 0123456.
Skip to main content | Back to top | Read more stories from the archive
The lighthouse reopened this spring.`

const linkFarm = Array.from({ length: 14 }, (_, i) => `- [Cheap ferry tickets to Islay and the southern isles, offer ${i + 1}](https://tickets.example/offer/${i + 1}) and [more deals](https://tickets.example/more/${i + 1})`).join("\n")

const german = `Der Leuchtturm am Hafen von Port Ellen führt die Fischerboote seit 1832 an dem Felsen vorbei. Nach zwei Jahrzehnten ohne Pflege war die Laterne undicht, die eiserne Galerie an einigen Stellen durchgerostet und das Haus des Wärters stand leer.

In diesem Frühjahr hat ein Verein von Freiwilligen die Restaurierung abgeschlossen, die vier Jahre gedauert hat. Die Ingenieure haben empfohlen, den ganzen Turm mit einem Kalkmörtel neu zu verfugen, durch den der Stein atmen kann, und nicht mit dem Zement, der bei den Reparaturen in den siebziger Jahren verwendet wurde.

Im Inneren war das alte Uhrwerk noch vorhanden, aber fest. Ein Uhrmacher aus dem Ort hat elf Monate an dem Getriebe gearbeitet, und die Linse dreht sich jetzt wieder alle dreißig Sekunden, so wie sie es im neunzehnten Jahrhundert getan hat. Am ersten Abend sind mehr als zweihundert Menschen auf den Pier gekommen.`

const contexts = jobContexts()
afterEach(contexts.cleanup)

const run = async (params: unknown, texts: unknown) => {
  const ctx = contexts.make()
  const out = await qualityFilterOp.handler(Schema.decodeUnknownSync(qualityFilterOp.params)(params), Schema.decodeUnknownSync(qualityFilterOp.input)(texts), ctx)
  return { out: Schema.decodeUnknownSync(qualityFilterOp.output)(out), message: ctx.progressLog.at(-1)?.message }
}

const doc = (url: string, text: string) => ({ url, title: null, text })

describe("quality_filter", () => {
  const input = [
    doc("https://a.example/lighthouse", lighthouse),
    doc("https://b.example/stub", stub),
    doc("https://c.example/furniture", furniture),
    doc("https://d.example/bread", bread),
    doc("https://e.example/syndicated", syndicated),
    linkFarm,
    doc("https://f.example/leuchtturm", german)
  ]

  it("the fixtures are what they claim: long enough, the copy near enough", () => {
    for (const t of [lighthouse, furniture, bread, syndicated, linkFarm, german]) expect(words(t).length).toBeGreaterThanOrEqual(100)
    expect(words(stub).length).toBeLessThan(100)
    expect(jaccard(shingles(lighthouse), shingles(syndicated))).toBeGreaterThanOrEqual(0.9)
    expect(jaccard(shingles(lighthouse), shingles(bread))).toBe(0)
  })

  it("drops exactly the stub, the furniture, the link farm and the near-copy (the first copy kept), texts as given", async () => {
    const { out, message } = await run({}, input)
    expect(out).toEqual([input[0], input[3], input[6]])
    expect(message).toBe("kept 3 of 7 texts; dropped 4: 1 under 100 words, 2 mostly boilerplate or links, 1 near-duplicates")
  })

  it("language: en also drops the German article; de keeps only it", async () => {
    expect((await run({ language: "en" }, input)).out).toEqual([input[0], input[3]])
    const de = await run({ language: "de" }, input)
    expect(de.out).toEqual([input[6]])
    // The language check comes before the duplicate check: the copy counts as not German.
    expect(de.message).toBe("kept 1 of 7 texts; dropped 6: 1 under 100 words, 2 mostly boilerplate or links, 3 not in language de")
  })

  it("thresholds are params: a lower min_words keeps the stub, max_similarity 1 keeps the near-copy, ratio 1 keeps the furniture", async () => {
    expect((await run({ min_words: 10 }, input)).out).toContainEqual(input[1])
    expect((await run({ max_similarity: 1 }, input)).out).toContainEqual(input[4])
    // An exact copy is a duplicate even at max_similarity 1.
    expect((await run({ max_similarity: 1 }, [lighthouse, lighthouse])).out).toEqual([lighthouse])
    const loose = await run({ max_boilerplate_ratio: 1 }, input)
    expect(loose.out).toContainEqual(input[2])
    expect(loose.out).toContainEqual(input[5])
  })

  it("rejects out-of-range params and unknown languages at decode", () => {
    const decode = Schema.decodeUnknownSync(qualityFilterOp.params)
    expect(() => decode({ max_similarity: 1.5 })).toThrow()
    expect(() => decode({ min_words: -1 })).toThrow()
    expect(() => decode({ language: "klingon" })).toThrow()
    expect(decode({})).toEqual({ min_words: 100, max_boilerplate_ratio: 0.5, max_similarity: 0.9, language: null })
  })
})

describe("quality measures", () => {
  it("boilerplateRatio: prose 0, furniture high, Markdown link text counted", () => {
    expect(boilerplateRatio(lighthouse)).toBe(0)
    expect(boilerplateRatio(furniture)).toBeGreaterThan(0.8)
    expect(boilerplateRatio(linkFarm)).toBeGreaterThan(0.8)
    // 3 of the 11 words a reader sees are link text; a bare URL is one word.
    expect(boilerplateRatio("The trust published its [survey report](https://x.example/r) in the spring of [2020](https://x.example/y).")).toBeCloseTo(3 / 11, 9)
    expect(boilerplateRatio("The full survey is at https://x.example/r for anyone who asks.")).toBeCloseTo(1 / 10, 9)
    expect(boilerplateRatio("")).toBe(0)
  })

  it("detectLanguage tells English, German and French prose apart and declines short or unknown text", () => {
    expect(detectLanguage(lighthouse)?.language).toBe("en")
    expect(detectLanguage(german)?.language).toBe("de")
    expect(detectLanguage("Le phare du port guide les bateaux de pêche depuis 1832. Après deux décennies sans entretien, la lanterne prenait l'eau et la galerie était rouillée. Ce printemps, une association de bénévoles a terminé une restauration qui a duré quatre ans, et la lumière tourne de nouveau toutes les trente secondes comme au dix-neuvième siècle.")?.language).toBe("fr")
    expect(detectLanguage("too short to tell")).toBeNull()
    expect(detectLanguage(Array.from({ length: 40 }, (_, i) => `zx${i}q`).join(" "))).toBeNull()
  })
})
