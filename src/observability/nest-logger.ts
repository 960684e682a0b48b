import type { LoggerService } from '@nestjs/common';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';

/**
 * nestjs-pino's PinoLogger on one given pino instance. The stock PinoLogger writes to a
 * logger held in module state (the first one made in the process, or one bound by its
 * request middleware), which several gateways in one process would share; this one keeps
 * each application's own logger, level and destination. No request middleware is used: the
 * gateway writes one line per call itself (CallTelemetry), with named fields only, and the
 * middleware's default request serializer would log headers, keys among them.
 */
class ApplicationPinoLogger extends PinoLogger {
  constructor(private readonly application: Logger) {
    super({ pinoHttp: { logger: application } });
  }

  override get logger(): Logger {
    return this.application;
  }
}

/**
 * Nest's own messages (start-up, warnings, errors) as JSON lines of `log`, with their context.
 * An object message's members become fields of the line: code that logs about a request gives
 * `{ msg, request_id }` (and `err` for an error, written with its stack), so the line is found
 * by the request id, as the call's own line is.
 */
export function nestLoggerOf(log: Logger): LoggerService {
  return new NestPinoLogger(new ApplicationPinoLogger(log), {});
}
