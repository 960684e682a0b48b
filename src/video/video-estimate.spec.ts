import { DEFAULT_DURATION_SECONDS, DRAFT_RESOLUTION, estimatedFigures, pricedResolution, type EstimateBasis } from './video-estimate';

/** Vendor-b output tokens of a 16:9 video `height` pixels high, at 24 frames per second, 1024 pixels a token. */
function expectedTokens(height: number, seconds: number): number {
  const width = Math.round((height * 16) / 9);
  return Math.round((width * height * 24 * seconds) / 1024);
}

function basis(overrides: Partial<EstimateBasis> = {}): EstimateBasis {
  return { draft: false, videoInput: false, inputImageCount: 0, ...overrides };
}

describe('video estimate constants', () => {
  it('follow SPEC.md Limits', () => {
    expect(DEFAULT_DURATION_SECONDS).toBe(30);
    expect(DRAFT_RESOLUTION).toBe('480p');
  });
});

describe(pricedResolution.name, () => {
  it('prices a task at the resolution it asks for', () => {
    expect(pricedResolution({ draft: false, resolution: '1080p' })).toBe('1080p');
  });

  it('is undefined when no resolution is named', () => {
    expect(pricedResolution({ draft: false })).toBeUndefined();
    expect(pricedResolution({ draft: false, resolution: null })).toBeUndefined();
  });

  it.each([undefined, null, '1080p', '4k', '480p'])('prices a draft at 480p whatever it asks for (%s)', (resolution) => {
    expect(pricedResolution({ draft: true, resolution })).toBe('480p');
  });
});

describe(estimatedFigures.name, () => {
  describe('the expected-token formula used below', () => {
    it('matches hand-computed values', () => {
      // 1280 × 720 × 24 × 5 / 1024 = 108000
      expect(expectedTokens(720, 5)).toBe(108000);
      // 853 × 480 × 24 × 5 / 1024 = 47981.25
      expect(expectedTokens(480, 5)).toBe(47981);
    });
  });

  describe('vendor-c', () => {
    it('reserves 30 seconds when the submit names no duration', () => {
      expect(estimatedFigures('video_c', basis())).toEqual({ output_seconds: 30, input_seconds: 0, input_image_count: 0 });
    });

    it('treats a null duration as absent', () => {
      expect(estimatedFigures('video_c', basis({ durationSeconds: null })).output_seconds).toBe(30);
    });

    it('uses the requested duration for output seconds', () => {
      expect(estimatedFigures('video_c', basis({ durationSeconds: 8 }))).toEqual({ output_seconds: 8, input_seconds: 0, input_image_count: 0 });
    });

    it('counts input video seconds as long as the output only when there is video input', () => {
      expect(estimatedFigures('video_c', basis({ durationSeconds: 8, videoInput: true })).input_seconds).toBe(8);
      expect(estimatedFigures('video_c', basis({ durationSeconds: 8, videoInput: false })).input_seconds).toBe(0);
      expect(estimatedFigures('video_c', basis({ videoInput: true })).input_seconds).toBe(30);
    });

    it('counts input images', () => {
      expect(estimatedFigures('video_c', basis({ durationSeconds: 5, inputImageCount: 3 }))).toEqual({
        output_seconds: 5,
        input_seconds: 0,
        input_image_count: 3,
      });
    });

    it('ignores resolution and draft, which are not vendor-c figures', () => {
      const figures = estimatedFigures('video_c', basis({ durationSeconds: 5, resolution: '1080p', draft: true }));
      expect(figures).toEqual({ output_seconds: 5, input_seconds: 0, input_image_count: 0 });
      expect(figures).not.toHaveProperty('output_video_tokens');
    });
  });

  describe('vendor-b', () => {
    function tokens(overrides: Partial<EstimateBasis>): number | undefined {
      return estimatedFigures('video_b', basis(overrides)).output_video_tokens;
    }

    it('reports output tokens only', () => {
      expect(Object.keys(estimatedFigures('video_b', basis({ durationSeconds: 5, resolution: '720p', inputImageCount: 2, videoInput: true })))).toEqual([
        'output_video_tokens',
      ]);
    });

    it('prices 5 seconds of 720p at 108000 tokens (hand-computed)', () => {
      expect(tokens({ durationSeconds: 5, resolution: '720p' })).toBe(108000);
    });

    it('prices 5 seconds of 1080p at 243000 tokens (hand-computed: 1920 × 1080 × 24 × 5 / 1024)', () => {
      expect(tokens({ durationSeconds: 5, resolution: '1080p' })).toBe(243000);
    });

    it('reserves 30 seconds when the submit names no duration', () => {
      expect(tokens({ resolution: '720p' })).toBe(expectedTokens(720, 30));
      expect(tokens({ resolution: '720p' })).toBe(648000);
      expect(tokens({ resolution: '720p', durationSeconds: null })).toBe(expectedTokens(720, 30));
    });

    it.each([
      ['720p', 720],
      ['1080P', 1080],
      ['480p', 480],
      ['1080p', 1080],
      [' 720P ', 720],
      ['360p', 360],
      ['1440p', 1440],
    ])('reads the height of %j as %d', (resolution, height) => {
      expect(tokens({ durationSeconds: 5, resolution })).toBe(expectedTokens(height, 5));
    });

    it('rounds the width of a 16:9 frame (480p is 853 wide)', () => {
      // 853 × 480 × 24 × 7 / 1024 = 67173.75
      expect(tokens({ durationSeconds: 7, resolution: '480p' })).toBe(67174);
      expect(expectedTokens(480, 7)).toBe(67174);
    });

    it('assumes 720p when no resolution is named', () => {
      expect(tokens({ durationSeconds: 5 })).toBe(expectedTokens(720, 5));
      expect(tokens({ durationSeconds: 5, resolution: null })).toBe(expectedTokens(720, 5));
    });

    it.each([
      ['2k', 1440],
      ['2K', 1440],
      ['4k', 2160],
      ['4K', 2160],
    ])('reads the named resolution %s as %d high', (resolution, height) => {
      expect(tokens({ durationSeconds: 5, resolution })).toBe(expectedTokens(height, 5));
    });

    it('prices 5 seconds of 4k at 972000 tokens (hand-computed: 3840 × 2160 × 24 × 5 / 1024)', () => {
      expect(tokens({ durationSeconds: 5, resolution: '4k' })).toBe(972000);
    });

    it.each(['ultra', 'hd', '72p', '12345p', '1080', 'p720', ''])('assumes 1080p for the unreadable resolution %j', (resolution) => {
      expect(tokens({ durationSeconds: 5, resolution })).toBe(expectedTokens(1080, 5));
    });

    it.each([undefined, '1080p', '4k', '720p', 'ultra'])('prices a draft at 480p whatever it asks for (%s)', (resolution) => {
      expect(tokens({ draft: true, durationSeconds: 5, resolution })).toBe(expectedTokens(480, 5));
      expect(tokens({ draft: true, durationSeconds: 5, resolution })).toBe(47981);
    });

    it('prices a draft without duration at 30 seconds of 480p', () => {
      expect(tokens({ draft: true })).toBe(expectedTokens(480, 30));
    });

    it('scales linearly with duration', () => {
      expect(tokens({ durationSeconds: 10, resolution: '720p' })).toBe(2 * (tokens({ durationSeconds: 5, resolution: '720p' }) ?? 0));
    });
  });
});
