import { Injectable } from '@nestjs/common';

/** The time source, injectable so rules that depend on time are tested without waiting. */
@Injectable()
export class Clock {
  now(): number {
    return Date.now();
  }
}
