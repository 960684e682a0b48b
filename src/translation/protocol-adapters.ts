import type { StreamDecoder, StreamEncoder } from './canonical/stream-steps';
import type { TranslationContext } from './canonical/ids';
import type { CanonicalRequest, Mapped, ReasoningOrigin } from './canonical/request';
import type { CanonicalError, CanonicalResponse } from './canonical/response';
import type { TextProtocol, TranslatableEntry } from './translation-routes';
import { decodeChatError } from './chat-completions/decode-chat-error';
import { decodeChatResponse } from './chat-completions/decode-chat-response';
import { ChatStreamDecoder } from './chat-completions/decode-chat-stream';
import { encodeChatRequest } from './chat-completions/encode-chat-request';
import { decodeMessagesError } from './messages/decode-messages-error';
import { decodeMessagesRequest } from './messages/decode-messages-request';
import { decodeMessagesResponse } from './messages/decode-messages-response';
import { MessagesStreamReader } from './messages/decode-messages-stream';
import { encodeMessagesError } from './messages/encode-messages-error';
import { encodeMessagesRequest } from './messages/encode-messages-request';
import { encodeMessagesResponse } from './messages/encode-messages-response';
import { MessagesStreamWriter } from './messages/encode-messages-stream';
import { decodeResponsesError } from './responses/decode-responses-error';
import { decodeResponsesRequest } from './responses/decode-responses-request';
import { decodeResponsesResponse } from './responses/decode-responses-response';
import { ResponsesStreamReader } from './responses/decode-responses-stream';
import { encodeResponsesError } from './responses/encode-responses-error';
import { encodeResponsesRequest } from './responses/encode-responses-request';
import { encodeResponsesResponse } from './responses/encode-responses-response';
import { ResponsesStreamWriter } from './responses/encode-responses-stream';

/** What an answer encoder needs to know of the client's request. */
export interface ClientRequestEcho {
  /** The client's request body, for fields a protocol echoes in its answer. */
  body: Record<string, unknown>;
  includeOpaqueReasoning: boolean;
}

/** The client side of a translated call: the called entry's protocol. */
export interface EntryAdapter {
  decodeRequest(body: Record<string, unknown>, options: { upstreamModel: string; defaultMaxOutputTokens: number }): Mapped<CanonicalRequest>;
  encodeResponse(response: CanonicalResponse, echo: ClientRequestEcho, context: TranslationContext): Record<string, unknown>;
  /** The called protocol's stream, written one canonical event at a time. */
  streamEncoder(echo: ClientRequestEcho, context: TranslationContext): StreamEncoder;
  encodeError(error: CanonicalError): Record<string, unknown>;
  /** The client's names of the canonical fields an upstream encoder may drop. */
  fieldNames: Record<'temperature' | 'topP' | 'stop', string>;
}

/** The upstream side of a translated call. */
export interface UpstreamAdapter {
  /** Upstream path under the line's base URL. */
  path: string;
  encodeRequest(request: CanonicalRequest): Mapped<Record<string, unknown>>;
  decodeResponse(body: unknown, origin: ReasoningOrigin): CanonicalResponse;
  /** The upstream's stream, read one event at a time. */
  streamDecoder(origin: ReasoningOrigin): StreamDecoder;
  decodeError(status: number, bodyText: string): CanonicalError;
}

export const ENTRY_ADAPTERS: Record<TranslatableEntry, EntryAdapter> = {
  responses: {
    decodeRequest: decodeResponsesRequest,
    encodeResponse: (response, echo, context) =>
      encodeResponsesResponse(response, { echo: echo.body, includeOpaqueReasoning: echo.includeOpaqueReasoning }, context),
    streamEncoder: (echo, context) => new ResponsesStreamWriter({ echo: echo.body, includeOpaqueReasoning: echo.includeOpaqueReasoning }, context),
    encodeError: encodeResponsesError,
    fieldNames: { temperature: 'temperature', topP: 'top_p', stop: 'stop' },
  },
  messages: {
    decodeRequest: (body, options) => decodeMessagesRequest(body, { upstreamModel: options.upstreamModel }),
    encodeResponse: (response, _echo, context) => encodeMessagesResponse(response, context),
    streamEncoder: (_echo, context) => new MessagesStreamWriter(context),
    encodeError: encodeMessagesError,
    fieldNames: { temperature: 'temperature', topP: 'top_p', stop: 'stop_sequences' },
  },
};

export const UPSTREAM_ADAPTERS: Record<TextProtocol, UpstreamAdapter> = {
  chat_completions: {
    path: '/v1/chat/completions',
    encodeRequest: encodeChatRequest,
    decodeResponse: (body) => decodeChatResponse(body),
    streamDecoder: () => new ChatStreamDecoder(),
    decodeError: decodeChatError,
  },
  responses: {
    path: '/v1/responses',
    encodeRequest: encodeResponsesRequest,
    decodeResponse: decodeResponsesResponse,
    streamDecoder: (origin) => new ResponsesStreamReader(origin),
    decodeError: decodeResponsesError,
  },
  messages: {
    path: '/v1/messages',
    encodeRequest: encodeMessagesRequest,
    decodeResponse: decodeMessagesResponse,
    streamDecoder: (origin) => new MessagesStreamReader(origin),
    decodeError: decodeMessagesError,
  },
};
