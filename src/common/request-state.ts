import type { Principal } from '../auth/principal';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import type { TopLevelField } from './json-scan';
import type { FormPart } from './multipart-form';
import type { TextProtocol } from '../translation/translation-routes';

/** What the guards established about a data-plane call, handed to the services. */
export interface AdmittedCall {
  entry: InterfaceName;
  /** Set when the model lacks the entry's interface and the call is translated to this protocol. */
  translateTo?: TextProtocol;
  model: ModelConfig;
  body: Buffer;
  /** Top-level JSON members; empty for a form body. */
  fields: Map<string, TopLevelField>;
  /** The parts of a `multipart/form-data` body (format A edits); absent for JSON. */
  form?: FormPart[];
  stream: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    call?: AdmittedCall;
    /** `performance.now()` when the request arrived. */
    startedAt: number;
  }
}
