/**
 * Transistor-level NMOS 6502 engine of the chip-sim plugin: netlist loading, the switch-level
 * chip, the ChipState wire encoding, SparseMemory, observations and the JSON-level simulator.
 */
export * from "./Chip.ts"
export * from "./Encoding.ts"
export * from "./Memory.ts"
export * from "./Netlist.ts"
export * from "./Nodes.ts"
export * from "./Observe.ts"
export * from "./Simulator.ts"
