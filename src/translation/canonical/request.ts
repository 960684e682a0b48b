/**
 * The canonical request: what the three text protocols (chat-completions, responses,
 * messages) have in common, plus what the translation rules of SPEC.md must carry between
 * them. Decoders turn a client request into it; encoders turn it into an upstream request.
 * Pure data: no protocol's field names leak in here.
 */

export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';

/** Where an opaque reasoning record came from; it is restored only on the same upstream model. */
export interface ReasoningOrigin {
  /** Upstream protocol that produced it: 'messages' | 'responses' | 'chat_completions'. */
  protocol: string;
  /** Upstream model name that produced it. */
  upstreamModel: string;
}

export type CanonicalPart =
  | { type: 'text'; text: string }
  /** `url` is an http(s) address or a `data:` URL with base64 content. */
  | { type: 'image'; url: string; detail?: string }
  /** An inline document (PDF) as base64 without the data: prefix. */
  | { type: 'file'; mediaType: string; data: string; filename?: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string; kind: 'function' | 'custom' }
  | {
      type: 'tool_result';
      callId: string;
      /** Text, or parts (text and images) when the protocol allows rich results. */
      content: string | Array<Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>>;
      isError?: boolean;
      kind: 'function' | 'custom';
    }
  /**
   * Model reasoning handed back by the client to continue it. `text` is the visible
   * reasoning (or its summary); `opaque` is what the upstream needs to continue it
   * (a signature or encrypted content), valid only for `origin`.
   */
  | {
      type: 'reasoning';
      text: string;
      /** Summary parts, for protocols that carry reasoning as a list of summaries. */
      summary?: string[];
      opaque?: { kind: 'signature' | 'encrypted' | 'redacted'; value: string; itemId?: string };
      origin?: ReasoningOrigin;
    };

export type CanonicalRole = 'user' | 'assistant';

export interface CanonicalMessage {
  role: CanonicalRole;
  parts: CanonicalPart[];
}

export interface CanonicalTool {
  name: string;
  description?: string;
  /** JSON schema of the arguments. A custom tool becomes one string parameter `input`. */
  parameters: Record<string, unknown>;
  /** Custom (free-form) tools are carried as functions and turned back on the way out. */
  kind: 'function' | 'custom';
  strict?: boolean;
}

export type CanonicalToolChoice = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

export interface CanonicalRequest {
  /** The upstream model name (already swapped in by the gateway). */
  model: string;
  /** System instructions, in order (responses `instructions` and system/developer items; messages `system`). */
  system: string[];
  messages: CanonicalMessage[];
  tools: CanonicalTool[];
  toolChoice?: CanonicalToolChoice;
  /** Absent means "the model may call tools in parallel" (each protocol's default). */
  parallelToolCalls?: boolean;
  maxOutputTokens: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  /** Absent: no reasoning asked for. */
  reasoning?: { effort: ReasoningEffort; summary?: boolean };
  /** The client asked to get opaque reasoning back (responses `include`), so it can continue it. */
  includeOpaqueReasoning?: boolean;
  stream: boolean;
}

/**
 * What a request mapping could not carry. `dropped` lists client fields that had an effect
 * the upstream will not see (sent back in `X-Gateway-Dropped`); `ignored` fields that never
 * change an answer (metadata, user, service tier, …) and are not listed.
 */
export interface Mapped<T> {
  value: T;
  dropped: string[];
  ignored: string[];
}

/** A request the translation path refuses (400), with a message for the client. */
export class TranslationRejection extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TranslationRejection';
  }
}
