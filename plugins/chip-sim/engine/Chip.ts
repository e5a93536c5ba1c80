/**
 * Switch-level simulation of the visual6502 NMOS 6502 netlist over typed arrays: the Chip class
 * and its public interface (state in and out, pins, observation, half-cycles with bus service).
 *
 * Nothing of the processor is modelled: every node is a wire with a logic level, every
 * transistor a switch closed while its gate node is high, settled by the event scheme of the
 * visual6502 / perfect6502 simulators that recorded the reference traces in
 * `shared/chip-sim/golden`. Chip is built in three layers, one class each, so that all of it is
 * one object with one shape (the hot paths read its fields directly):
 *
 * - ChipSettle.ts: the electrical state, the caches derived from it (node words) and the settle,
 *   in the WebAssembly kernel (SettleKernel.ts) or, for states whose transistors do not follow
 *   their gates, in TypeScript (the general statement of the scheme);
 * - ChipMemo.ts: the memo driving, which carries states that recur forward by replaying
 *   recorded settles and 32-half-cycle spans (Memo.ts), and the half-cycle with bus service;
 * - here: loading, saving and powering on a state, driving pins.
 *
 * The whole machine state is the four arrays `value`, `pullup`, `pulldown`, `transOn` (see
 * Encoding.ts for their wire form); everything else is a cache derived from them,
 * including a memo of whole settles and of 32-half-cycle spans (Memo.ts), keyed by the complete
 * state and confirmed word for word before a replay, which only changes how fast a state that
 * recurs is carried forward: tests compare results with the memo on and off over millions of
 * half-cycles of Klaus Dormann's functional test.
 */
import { ChipMemo, type ChipMemoOptions } from "./ChipMemo.ts"
import type { ChipTables } from "./Tables.ts"

export { MAX_SETTLE_PASSES } from "./ChipSettle.ts"
export { MACRO_ENTRIES_MAX, MACRO_HALF_CYCLES, MEMO_ENTRIES_MAX } from "./ChipMemo.ts"
export { DRV_GND, DRV_PULLDOWN, DRV_PULLUP, DRV_VCC, makeTables, type ChipTables, type PinIds } from "./Tables.ts"

/** The four arrays that are the whole electrical state of the chip. */
export interface NodeState {
  readonly value: Uint8Array
  readonly pullup: Uint8Array
  readonly pulldown: Uint8Array
  readonly transOn: Uint8Array
}

/**
 * One chip: its electrical state plus caches and scratch space for settling (ChipSettle) and the
 * memo that carries recurring states forward (ChipMemo). Not re-entrant; the Simulator keeps one
 * and reloads its state for every request.
 */
export class Chip extends ChipMemo {
  /**
   * `memo: false` settles every half-cycle from scratch; `"always"` keeps the memo on wherever it
   * can be used, never judging whether it pays (tests and the differential run compare all three).
   */
  constructor(tables: ChipTables, options: ChipMemoOptions = {}) {
    super(tables, options)
  }

  /** Replaces the electrical state with copies of `s` (lengths must match the netlist). */
  load(s: NodeState): void {
    this.value.set(s.value)
    this.pullup = Uint8Array.from(s.pullup)
    this.pulldown = Uint8Array.from(s.pulldown)
    this.trans = Uint8Array.from(s.transOn)
    this.transStale = false
    this.resetScratch()
  }

  /** Copies of the electrical state. */
  save(): NodeState {
    return {
      value: Uint8Array.from(this.value),
      pullup: Uint8Array.from(this.pullup),
      pulldown: Uint8Array.from(this.pulldown),
      transOn: Uint8Array.from(this.transOn)
    }
  }

  /**
   * Power-on state: every node low and floating except `vcc` high, every transistor off,
   * pull-ups as `segdefs.js` marks them, no pull-downs.
   */
  powerOn(): void {
    const t = this.tables
    this.value.fill(0)
    this.value[t.vcc] = 1
    this.pullup = Uint8Array.from(t.netlist.pullup)
    this.pulldown = new Uint8Array(t.nodeCount)
    this.trans = new Uint8Array(t.transistorCount)
    this.transStale = false
    this.resetScratch()
  }

  /** Drives a pin: pull-up to `level`, pull-down to its opposite, then settles from it. */
  setPin(node: number, level: number): void {
    this.drive(node, level)
    // a rail is never settled (the kernel's lists hold no rails)
    if (node === this.tables.vss || node === this.tables.vcc) return
    this.listA[0] = node
    this.settle(1)
  }

  /** Settles starting from every node, in node order (the end of power-on). */
  settleAll(): void {
    const t = this.tables
    let count = 0
    // rails are never settled: left out of the list (the kernel's lists hold no rails)
    for (let i = 0; i < t.nodeCount; i++) if (i !== t.vss && i !== t.vcc) this.listA[count++] = i
    this.settle(count)
  }
}
