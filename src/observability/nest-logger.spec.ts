import { ConsoleLogger, Logger } from '@nestjs/common';
import pino from 'pino';
import { nestLoggerOf } from './nest-logger';

/** A Nest Logger of the given context writing JSON lines to `lines`, as the application's does. */
function loggerWriting(lines: Array<Record<string, unknown>>, context: string): Logger {
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  Logger.overrideLogger(nestLoggerOf(log));
  return new Logger(context);
}

describe(nestLoggerOf.name, () => {
  afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

  it('writes the members of an object message as fields of the line, the request id among them, with its context', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = loggerWriting(lines, 'VideoTasks');

    logger.warn({ msg: 'video task vt-1: could not record its state', request_id: 'request-1', task_id: 'vt-1' });

    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        context: 'VideoTasks',
        msg: 'video task vt-1: could not record its state',
        request_id: 'request-1',
        task_id: 'vt-1',
      }),
    ]);
  });

  it('writes an error given as `err` with its type, message and stack', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = loggerWriting(lines, 'Gateway');

    logger.error({ msg: 'request failed', request_id: 'request-2', err: new TypeError('no such member') });

    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        context: 'Gateway',
        msg: 'request failed',
        request_id: 'request-2',
        err: expect.objectContaining({ type: 'TypeError', message: 'no such member', stack: expect.stringContaining('TypeError: no such member') }),
      }),
    ]);
  });
});
