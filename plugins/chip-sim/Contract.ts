/**
 * What chip-sim offers other plugins (the only module they may import): the cartridge format's
 * checks and the tile encoding. Nothing here loads the netlist or starts the simulator.
 * - `verifyCartridge(gzip, maxJsonBytes)`: a minted cartridge's document, or
 *   `CartridgeFormatError` saying which check failed (see console/Cartridge.ts);
 * - `pixelsToChr(tiles)`: tiles of eight strings of `0`-`3` to CHR bytes, or `TileFormatError`.
 */
export { CartridgeFormatError, type CartridgeDocument, verifyCartridge } from "./console/Cartridge.ts"
export { CARTRIDGE_FORMAT, CARTRIDGE_VERSION } from "./console/Console.ts"
export { pixelsToChr, TILE_BYTES, TileFormatError } from "./console/Tiles.ts"
