import { SchedulerRegistry } from '@nestjs/schedule';
import { Rounds } from './rounds';

/** A round that ends when the test says so. */
function gatedWork() {
  const gates: Array<(value: number) => void> = [];
  const work = jest.fn(() => new Promise<number>((resolve) => gates.push(resolve)));
  const open = (value: number) => gates.shift()!(value);
  return { work, open };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Rounds', () => {
  let scheduler: SchedulerRegistry;

  beforeEach(() => {
    scheduler = new SchedulerRegistry();
  });

  it('gives a round asked for while one runs that same round', async () => {
    const { work, open } = gatedWork();
    const rounds = new Rounds(scheduler, 'job', work, -1);

    const first = rounds.run();
    const second = rounds.run();
    open(7);

    expect(await first).toBe(7);
    expect(await second).toBe(7);
    expect(work).toHaveBeenCalledTimes(1);
    await rounds.stop();
  });

  it('starts a new round once the last one has ended', async () => {
    const { work, open } = gatedWork();
    const rounds = new Rounds(scheduler, 'job', work, -1);

    const first = rounds.run();
    open(1);
    await first;
    const second = rounds.run();
    open(2);

    expect(await second).toBe(2);
    expect(work).toHaveBeenCalledTimes(2);
    await rounds.stop();
  });

  it('runs a nudge at once when idle, and after the round under way otherwise, once', async () => {
    const { work, open } = gatedWork();
    const rounds = new Rounds(scheduler, 'job', work, -1);

    rounds.nudge();
    expect(work).toHaveBeenCalledTimes(1);
    rounds.nudge();
    rounds.nudge();
    expect(work).toHaveBeenCalledTimes(1);
    open(1);
    await turn();

    expect(work).toHaveBeenCalledTimes(2);
    open(2);
    await turn();
    expect(work).toHaveBeenCalledTimes(2);
    await rounds.stop();
  });

  it('waits at stop for the round under way, then runs no more and gives the idle value', async () => {
    const { work, open } = gatedWork();
    const rounds = new Rounds(scheduler, 'job', work, -1);
    void rounds.run();

    let stopped = false;
    const stopping = rounds.stop().then(() => (stopped = true));
    await turn();
    expect(stopped).toBe(false);
    expect(rounds.isStopped).toBe(true);
    open(3);
    await stopping;

    expect(await rounds.run()).toBe(-1);
    rounds.nudge();
    expect(work).toHaveBeenCalledTimes(1);
  });

  it('lets a failed round leave the next free to run, and stop resolve when the round under way fails', async () => {
    let fail = true;
    const work = jest.fn(() => (fail ? Promise.reject(new Error('database away')) : Promise.resolve(5)));
    const rounds = new Rounds(scheduler, 'job', work, -1);

    await expect(rounds.run()).rejects.toThrow('database away');
    fail = false;
    expect(await rounds.run()).toBe(5);
    fail = true;
    const failing = rounds.run();
    await rounds.stop();
    await expect(failing).rejects.toThrow('database away');
  });

  it('runs on an interval registered with the scheduler, which stop removes', async () => {
    const work = jest.fn(() => Promise.resolve(0));
    const rounds = new Rounds(scheduler, 'job', work, -1);

    rounds.every(5);
    expect(scheduler.doesExist('interval', 'job')).toBe(true);
    // Until two rounds have run, however late a loaded machine fires the timer (a fixed wait could end first).
    while (work.mock.calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await rounds.stop();

    expect(work.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(scheduler.doesExist('interval', 'job')).toBe(false);
    const calls = work.mock.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(work).toHaveBeenCalledTimes(calls);
  });
});
