/** One server-sent event as a test reads it: the `event:` name and the `data:` text. */
export interface SseItem {
  event?: string;
  data: string;
}

/** Splits a whole SSE answer into its events (data lines of one event joined without separator). */
export function parseSse(text: string): SseItem[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const item: SseItem = { data: '' };
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) item.event = line.slice(6).trim();
        if (line.startsWith('data:')) item.data += line.slice(5).trim();
      }
      return item;
    });
}
