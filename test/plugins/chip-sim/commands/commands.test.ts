import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { assemble } from "../../../../plugins/chip-sim/assembler/Assembler.ts"
import { haveNetlist } from "../engine/golden.ts"
import { runCli } from "../../../support/cli.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chip-cli-"))

// A binary image whose loop takes 256,000+ half-cycles to fall through to `done` ($020A): more
// than one request's 200,000, so the run goes in several steps.
const image = assemble("  .org $0200\n  ldx #0\n  ldy #100\nouter: dex\n  bne outer\n  dey\n  bne outer\ndone: jmp done\n")

describe.skipIf(!haveNetlist)("platform chip run / chip cartridge", () => {
  it("runs a binary image past one step to its breakpoint with progress (exit 0), saves, resumes; exit 1 at the bound", async () => {
    const bin = path.join(dir, "loop.bin")
    fs.writeFileSync(bin, image.image)
    const saved = path.join(dir, "machine.json")
    const run = await runCli(["chip", "run", "--image", bin, "--org", "0200", "--reset-vector", "$0200", "--until-pc", "020a", "--max-half-cycles", "400000", "--progress", "--save", saved])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/reached the opcode fetch at \$020a/)
    expect(run.stdout).toMatch(/half-cycles\/s/)
    expect(run.stderr).toMatch(/half-cycles\/s \| PC \$[0-9a-f]{4}/)
    const machine = JSON.parse(fs.readFileSync(saved, "utf8"))
    expect(machine.state.half_cycle).toBeGreaterThan(200_000)
    const resumed = await runCli(["chip", "run", "--resume", saved, "--half-cycles", "10", "--json"])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({ stepped: 10, completed: true, stopped: "count", observe: { half_cycle: machine.state.half_cycle + 10 } })
    const bound = await runCli(["chip", "run", "--image", bin, "--org", "0200", "--reset-vector", "0200", "--until-pc", "0300", "--max-half-cycles", "1000"])
    expect(bound.code).toBe(1)
    expect(bound.stdout).toMatch(/bound reached before the target/)
    const bad = await runCli(["chip", "run", "--image", bin, "--org", "zz"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--org: "zz" is not an address/)
  }, 180_000)

  it("mints an example cartridge, draws it in truecolour and writes a PNG", async () => {
    const png = path.join(dir, "sprite.png")
    const r = await runCli(["chip", "cartridge", "--example", "sprite", "--frames", "3", "--input", "1", "--png", png])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("\x1b[38;2;224;162;75m") // the ball: polysilicon #E0A24B
    expect(r.stdout).toMatch(/sprite: 3\/3 frames/)
    expect(fs.readFileSync(png).subarray(1, 4).toString()).toBe("PNG")
  }, 120_000)
})
