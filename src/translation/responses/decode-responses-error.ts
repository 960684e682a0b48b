import type { CanonicalError } from '../canonical/response';

/**
 * OpenAI Responses error bodies (`{"error":{message,type,code,param}}`, the chat shape) →
 * canonical error, and the kind of an error reported inside a stream.
 * @see https://platform.openai.com/docs/guides/error-codes
 */

type ErrorKind = CanonicalError['kind'];

/** Responses errors have the chat shape, read by the same code (status → kind included). */
export { decodeChatError as decodeResponsesError, chatErrorKind as responsesErrorKind } from '../chat-completions/decode-chat-error';

/**
 * Kind of an error inside a stream (`error` event or `response.failed`), where no status comes
 * along: read from the code. Anything unknown is an upstream failure.
 * @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-error
 */
export function responsesStreamErrorKind(code: unknown): ErrorKind {
  switch (code) {
    case 'rate_limit_exceeded':
    case 'insufficient_quota':
      return 'rate_limit';
    case 'server_is_overloaded':
    case 'slow_down':
      return 'overloaded';
    case 'invalid_prompt':
    case 'invalid_request_error':
    case 'context_length_exceeded':
      return 'invalid_request';
    default:
      return 'server';
  }
}
