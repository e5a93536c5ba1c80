/**
 * Pixel dimensions read from image headers, so the screenshot result reports what the file
 * holds (a full-page capture is as tall as the document, not the viewport).
 */

/** Width and height in pixels. */
export interface Dimensions {
  readonly width: number
  readonly height: number
}

/**
 * Reads the dimensions of a PNG (IHDR) or baseline/progressive JPEG (SOFn marker).
 * Throws `Error` for any other or truncated data.
 */
export const imageDimensions = (buf: Uint8Array): Dimensions => {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  if (b.length >= 24 && b.readUInt32BE(0) === 0x89504e47 && b.toString("latin1", 12, 16) === "IHDR") {
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) }
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    let at = 2
    while (at + 9 < b.length) {
      if (b[at] !== 0xff) throw new Error("JPEG: marker expected")
      const marker = b[at + 1]!
      if (marker === 0xff) {
        at += 1 // fill byte
        continue
      }
      const len = b.readUInt16BE(at + 2)
      // SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) }
      }
      at += 2 + len
    }
    throw new Error("JPEG: no frame header")
  }
  throw new Error("not a PNG or JPEG image")
}
