import { crc32, inflateSync } from 'node:zlib';
import { SIMULATED_PNG } from './image-common';

describe('UpstreamSimulator images', () => {
  it('answers a PNG that decodes: signature, 1x1 RGBA header, inflatable pixel data, valid CRCs', () => {
    expect(SIMULATED_PNG.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const chunks: Array<{ type: string; data: Buffer }> = [];
    for (let offset = 8; offset < SIMULATED_PNG.length;) {
      const length = SIMULATED_PNG.readUInt32BE(offset);
      const typed = SIMULATED_PNG.subarray(offset + 4, offset + 8 + length);
      expect(SIMULATED_PNG.readUInt32BE(offset + 8 + length)).toBe(crc32(typed));
      chunks.push({ type: typed.subarray(0, 4).toString('ascii'), data: typed.subarray(4) });
      offset += 12 + length;
    }
    expect(chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect([chunks[0].data.readUInt32BE(0), chunks[0].data.readUInt32BE(4), chunks[0].data[8], chunks[0].data[9]]).toEqual([1, 1, 8, 6]);
    expect(inflateSync(chunks[1].data)).toHaveLength(1 + 4);
  });
});
