import type { GatewayError } from '../common/gateway-error';
import type { InterfaceName } from '../config/gateway-config';

/**
 * The in-stream error event of each protocol, for failures after the first byte reached the
 * client (the status line is gone by then).
 */
export function inStreamError(entry: InterfaceName, failure: GatewayError): string {
  const { code, message } = failure;
  switch (entry) {
    case 'messages':
      return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`;
    case 'responses':
      return `event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param: null })}\n\n`;
    case 'speech_c':
      // Speech clients check `base_resp`; 1000 is the family's "unknown error", 1001 its timeout.
      return `data: ${JSON.stringify({ base_resp: { status_code: code === 'upstream_timeout' ? 1001 : 1000, status_msg: message } })}\n\n`;
    default:
      return `data: ${JSON.stringify({ error: { message, type: 'upstream_error', code } })}\n\n`;
  }
}
