import type { InterfaceName } from '../config/gateway-config';

/**
 * The in-stream error event of each protocol, for failures after the first byte reached the
 * client (the status line is gone by then).
 */
export function inStreamError(entry: InterfaceName, message: string): string {
  switch (entry) {
    case 'messages':
      return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`;
    case 'responses':
      return `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'upstream_failed', message, param: null })}\n\n`;
    case 'speech_c':
      // Speech clients check `base_resp`; 1000 is the family's "unknown error".
      return `data: ${JSON.stringify({ base_resp: { status_code: 1000, status_msg: message } })}\n\n`;
    default:
      return `data: ${JSON.stringify({ error: { message, type: 'upstream_error', code: 'upstream_failed' } })}\n\n`;
  }
}
