import type { Principal } from '../auth/principal';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import type { TopLevelField } from './json-scan';

/** What the guards established about a data-plane call, handed to the services. */
export interface AdmittedCall {
  entry: InterfaceName;
  model: ModelConfig;
  body: Buffer;
  fields: Map<string, TopLevelField>;
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
