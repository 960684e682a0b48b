import { PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { BodySpool } from '../request-body/body-spool';
import { GatewayError } from '../common/gateway-error';

type Constructor<T> = new () => T;

function problemsOf(errors: ValidationError[], parent = ''): string[] {
  const problems: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    if (error.constraints) {
      // The whitelist's message says "property x should not exist"; say it once, plainly.
      const messages = Object.entries(error.constraints).map(([rule, message]) =>
        rule === 'whitelistValidation' ? 'is not a field of this request' : message.replace(new RegExp(`^${error.property} `), ''),
      );
      problems.push(`${path}: ${messages[0]}`);
    }
    problems.push(...problemsOf(error.children ?? [], path));
  }
  return problems;
}

/** Checks a plain object against a DTO class; a problem is a 400 naming the field. */
export function validated<T extends object>(type: Constructor<T>, plain: unknown, what: string): T {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    throw new GatewayError('invalid_request', `The ${what} must be a JSON object.`);
  }
  const instance = plainToInstance(type, plain);
  const problems = problemsOf(validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }));
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '));
  return instance;
}

/**
 * The admin API's pipe: a JSON body (the gateway reads every body as bytes) or a query string,
 * validated against its DTO class.
 */
export class Validated<T extends object> implements PipeTransform<unknown, T | Promise<T>> {
  constructor(
    private readonly type: Constructor<T>,
    private readonly source: 'body' | 'query',
  ) {}

  transform(value: unknown): T | Promise<T> {
    if (this.source === 'query') return validated(this.type, { ...(value as object) }, 'query string');
    // A body over BODY_SPOOL_ABOVE_BYTES was written to a file (docs/configuration.md "Large bodies").
    if (value instanceof BodySpool) return value.text().then((text) => validated(this.type, parseJsonBody(text), 'request body'));
    return validated(this.type, parseJsonBody(Buffer.isBuffer(value) ? value.toString('utf8') : ''), 'request body');
  }
}

/** A JSON object body taken as it is, for routes whose checks are the configuration file's rules (catalog items). */
export class JsonObjectBody implements PipeTransform<unknown, Record<string, unknown> | Promise<Record<string, unknown>>> {
  transform(value: unknown): Record<string, unknown> | Promise<Record<string, unknown>> {
    if (value instanceof BodySpool) return value.text().then(jsonObject);
    return jsonObject(Buffer.isBuffer(value) ? value.toString('utf8') : '');
  }
}

function jsonObject(text: string): Record<string, unknown> {
  const value = parseJsonBody(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  return value as Record<string, unknown>;
}

function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  try {
    return JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request', 'The request body is not valid JSON.');
  }
}
