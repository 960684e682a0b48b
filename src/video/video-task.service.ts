import { Inject, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Clock } from '../common/clock';
import { CatalogService } from '../catalog/catalog.service';
import { clientRequestIdOf, type CallOutcome } from '../metering/call-recorder';
import { ForwardedCall } from '../forwarding/forwarded-call';
import { GatewayError, statusOf } from '../common/gateway-error';
import { errorBody } from '../common/error-body';
import { splicedParts } from '../request-body/json-splice';
import { nanoToNumber } from '../config/money';
import { type PriceBasis, recordCostOf } from '../metering/pricing';
import { priceSheetOf } from '../metering/price-sheets';
import { Pricing, pricingOf, pricingSpecOf } from '../config/catalog-spec';
import type { UsageFigures } from '../metering/usage-figures';
import { QuotaService } from '../metering/quota.service';
import type { Moved } from '../metering/budget-ledger';
import type { OpenedResponse } from '../upstream/forward.service';
import { returnedResponseHeaders } from '../upstream/header-policy';
import { upstreamBodyOf } from '../upstream/upstream-client';
import { submitFacts } from './submit-rules';
import { newTaskId } from './task-ids';
import { EstimateBasis, estimatedFigures, pricedResolution } from './video-estimate';
import { VIDEO_SETTINGS, VideoSettings } from '../config/settings/video.settings';
import { isFinalStatus, SUBMITTING, VideoTask } from './video-task.entity';
import { NewVideoTask, SettlementEntry, VideoTaskStore } from './video-task.store';
import { TaskAnswer, VideoUpstream } from './video-upstream';
import { parsedJson, ReportedTask, VideoWire, wireOf, withGatewayId } from './video-wire';
import { GatewayMetrics } from '../observability/gateway-metrics';

/**
 * The video task endpoints (SPEC.md "Video tasks") and the settlement they share with the
 * background reconciler. A client only ever sees the gateway's task id; the upstream id,
 * line and reservation stay in the task's row.
 */
@Injectable()
export class VideoTaskService {
  private readonly logger = new Logger('VideoTasks');

  constructor(
    private readonly store: VideoTaskStore,
    private readonly upstream: VideoUpstream,
    private readonly calls: ForwardedCall,
    private readonly catalog: CatalogService,
    private readonly quota: QuotaService,
    private readonly clock: Clock,
    @Inject(VIDEO_SETTINGS) private readonly settings: VideoSettings,
    private readonly metrics: GatewayMetrics,
  ) {}

  /**
   * Submit: checked (400), drafts resolved (404), reserved (402), forwarded with the upstream
   * model and draft ids; the answer carries the new gateway id. A submit that creates no
   * upstream task gives its reservation back and is recorded at once; one that does is
   * recorded when the task settles, under this request's id.
   */
  async submit(request: FastifyRequest, reply: FastifyReply, wire: VideoWire): Promise<void> {
    const call = request.call!;
    const principal = request.principal!;
    const facts = submitFacts(call.body, call.fields, wire.interface);
    const replacements = new Map<string, string>();
    if (facts.draftTaskIds.length > 0) {
      // A spooled body's skeleton has its long strings (data: URLs) cut: the content that goes upstream again is read whole.
      if (call.spool && !call.spool.isOpen) throw new GatewayError('invalid_request', 'The client closed the request before it was sent upstream.');
      const content = call.spool ? ((await call.spool.value(call.fields.get('content')!)) as Array<Record<string, unknown>>) : facts.content!;
      replacements.set('content', JSON.stringify(await this.withUpstreamDrafts(facts.draftTaskIds, content, principal.ownerId)));
    }

    const bodyFor = (upstreamModel: string) =>
      upstreamBodyOf(splicedParts(call.body, call.fields, new Map([...replacements, ['model', JSON.stringify(upstreamModel)]])), call.spool);

    const now = this.clock.now();
    const task: NewVideoTask = {
      id: newTaskId(),
      ownerId: principal.ownerId,
      keyId: principal.keyId,
      interface: wire.interface,
      model: call.model.id,
      draft: facts.draft,
      durationSeconds: facts.durationSeconds ?? null,
      resolution: facts.resolution ?? null,
      videoInput: facts.videoInput,
      inputImageCount: facts.inputImageCount,
      reservedNano: 0n,
      // The task is priced with these at its settlement, whatever the catalog says by then.
      pricing: pricingSpecOf(call.model),
      submitRequestId: request.id,
      clientRequestId: clientRequestIdOf(request),
      submittedAt: new Date(now),
      nextPollAt: new Date(now + this.settings.submitLostAfterMs),
      tags: call.tags ? [...call.tags] : null,
      endUser: call.endUser ?? null,
    };
    task.reservedNano = this.costOf(call.model, estimatedFigures(task.interface, task), task)!;
    const reserved = await this.store.reserve(task, { owner: this.quota.pending(principal.ownerId), key: this.quota.pendingOfKey(principal.keyId) });
    if ('refused' in reserved) {
      const budget = reserved.refused === 'key' ? 'The budget of this key' : "The budget of this key's quota owner";
      throw new GatewayError('insufficient_quota', `${budget} cannot cover this task's reservation of ${nanoToNumber(task.reservedNano)}.`);
    }
    this.observe(task, reserved);

    // Set once the answer is settled either way: the task created, or its reservation given back.
    let answered = false;
    try {
      await this.calls.run(request, reply, {
        recordAs: wire.interface,
        upstreamInterface: wire.interface,
        path: wire.submitPath,
        body: bodyFor(call.model.upstreamModel),
        forModel: (upstreamModel) => ({ path: wire.submitPath, body: bodyFor(upstreamModel) }),
        // SPEC.md: submits are not de-duplicated, so one that may have reached the vendor is never sent again.
        mayRetry: false,
        incomingHeaders: request.headers,
        answer: async (opened, response) => {
          const outcome = await this.answerSubmit(opened, response, wire, task);
          answered = true;
          return outcome;
        },
        figures: () => undefined,
      });
    } finally {
      if (!answered) await this.release(task);
    }
  }

  /** Query: the upstream's task object with the gateway id in place of the upstream's. */
  async query(request: FastifyRequest, reply: FastifyReply, wire: VideoWire, taskId: string): Promise<void> {
    const task = await this.owned(request, wire, taskId);
    const answer = await this.upstream.query(task, request.headers);
    if (isSuccess(answer.statusCode)) await this.applyQuietly(request, task, wire.reported(parsedJson(answer.body)));
    send(reply, answer, task);
  }

  /**
   * Cancel: queued tasks only (SPEC.md "States and transitions"). The upstream is asked for the
   * task's state first, so a running task gets 400 and is left as it is; a cancelled task
   * releases its reservation and is not billed.
   */
  async cancel(request: FastifyRequest, reply: FastifyReply, wire: VideoWire, taskId: string): Promise<void> {
    const task = await this.owned(request, wire, taskId);
    if (task.settledAt !== null || task.status !== 'queued') throw notCancellable(task.status);
    const current = await this.upstream.query(task, request.headers);
    if (!isSuccess(current.statusCode)) return send(reply, current, task);
    const reported = wire.reported(parsedJson(current.body));
    if (reported.status !== undefined && reported.status !== 'queued') {
      await this.applyQuietly(request, task, reported);
      throw notCancellable(reported.status);
    }
    const answer = await this.upstream.cancel(task, request.headers);
    if (isSuccess(answer.statusCode)) {
      await this.settle(task, { ...unbilled('cancelled'), settledAt: new Date(this.clock.now()) });
    }
    send(reply, answer, task);
  }

  /**
   * One background look at a claimed task: a lost submit gives its reservation back; otherwise
   * the upstream is asked, a final status settles the task, anything else schedules the next
   * look further away; a task still open 8 days after submission is charged its reservation.
   */
  async follow(task: VideoTask, now: number, chargeUnsettledAfterMs: number): Promise<void> {
    if (task.upstreamTaskId === null) {
      if (task.status === SUBMITTING) await this.release(task);
      return;
    }
    let status = task.status;
    try {
      const answer = await this.upstream.query(task);
      const reported = isSuccess(answer.statusCode) ? wireOf(task.interface).reported(parsedJson(answer.body)) : undefined;
      if (reported?.status === undefined) {
        await this.store.pollFailed(task.id, reported ? 'the answer has no task status' : `HTTP ${answer.statusCode}`, this.nextPoll(now, task.polls + 1));
      } else {
        status = reported.status;
        if (await this.apply(task, reported, true, now)) return;
      }
    } catch (error) {
      await this.store.pollFailed(task.id, error instanceof Error ? error.message : String(error), this.nextPoll(now, task.polls + 1));
    }
    if (now - task.submittedAt.getTime() >= chargeUnsettledAfterMs) {
      await this.settle(task, {
        status,
        settlement: 'reserved',
        costNano: task.reservedNano,
        figures: undefined,
        errorCode: 'task_unsettled',
        ...UNPRICED,
        settledAt: new Date(now),
      });
    }
  }

  /** The gateway id's task, if it belongs to the caller's quota owner on this interface; else 404. */
  private async owned(request: FastifyRequest, wire: VideoWire, taskId: string): Promise<VideoTask> {
    const task = await this.store.find(taskId);
    if (!task || task.ownerId !== request.principal!.ownerId || task.interface !== wire.interface || task.upstreamTaskId === null) {
      throw new GatewayError('not_found', `No video task has the id ${JSON.stringify(taskId)}.`);
    }
    return task;
  }

  /** The submit's content with each draft's gateway id replaced by its upstream id; 404 for a draft of another owner. */
  private async withUpstreamDrafts(draftTaskIds: string[], content: Array<Record<string, unknown>>, ownerId: string): Promise<Array<Record<string, unknown>>> {
    const upstreamIds = new Map<string, string>();
    for (const id of draftTaskIds) {
      const draft = await this.store.find(id);
      if (!draft || !draft.draft || draft.ownerId !== ownerId || draft.interface !== 'video_b' || draft.upstreamTaskId === null) {
        throw new GatewayError('not_found', `No draft task has the id ${JSON.stringify(id)}.`);
      }
      upstreamIds.set(id, draft.upstreamTaskId);
    }
    return content.map((item) => {
      if (item.type !== 'draft_task') return item;
      const reference = item.draft_task as Record<string, unknown>;
      return { ...item, draft_task: { ...reference, id: upstreamIds.get(reference.id as string) } };
    });
  }

  private async answerSubmit(opened: OpenedResponse, response: ServerResponse, wire: VideoWire, task: NewVideoTask): Promise<CallOutcome> {
    const body = await opened.body.whole();
    const base = { status: opened.statusCode, line: opened.line.id, figures: undefined, upstreamHeadersMs: opened.headersMs };
    const ok = isSuccess(opened.statusCode);
    const upstreamId = ok ? wire.submittedId(parsedJson(body)) : undefined;
    // No task upstream: the reservation comes back before the client hears, so a retry finds it free.
    if (upstreamId === undefined) await this.release(task);
    if (ok && upstreamId === undefined) {
      const failure = new GatewayError('upstream_failed', 'The upstream accepted the task but its answer names no task id.');
      writeWhole(response, statusOf(failure.code), {}, 'application/json', Buffer.from(errorBody(failure, 'openai')));
      return { ...base, status: statusOf(failure.code), errorCode: 'upstream_no_task_id' };
    }
    if (upstreamId !== undefined) {
      await this.store.confirm(task.id, upstreamId, opened.line.id, new Date(this.clock.now() + this.settings.firstPollDelayMs));
    }
    const type = (opened.headers['content-type'] as string | undefined) ?? 'application/json';
    writeWhole(
      response,
      opened.statusCode,
      returnedResponseHeaders(opened.headers),
      type,
      upstreamId === undefined ? body : withGatewayId(body, upstreamId, task.id),
    );
    return upstreamId === undefined ? { ...base, errorCode: `upstream_${opened.statusCode}` } : { ...base, errorCode: null, deferred: true };
  }

  /**
   * Takes in what a query answer reported: a final status settles the task (true); an
   * in-progress one is stored, and from the reconciler schedules the next poll.
   */
  private async apply(task: VideoTask, reported: ReportedTask, fromReconciler: boolean, now = this.clock.now()): Promise<boolean> {
    const status = reported.status;
    if (status === undefined) return false;
    if (isFinalStatus(status)) {
      await this.settle(task, { ...this.finalEntry(task, status, reported), settledAt: new Date(now) });
      return true;
    }
    if (fromReconciler) await this.store.observed(task.id, status, this.nextPoll(now, task.polls + 1), true);
    else if (status !== task.status) await this.store.observed(task.id, status, null, false);
    return false;
  }

  /** A client's query or cancel still gets its answer when recording what it saw fails. */
  private async applyQuietly(request: FastifyRequest, task: VideoTask, reported: ReportedTask): Promise<void> {
    try {
      await this.apply(task, reported, false);
    } catch (error) {
      // Fields of the JSON line (nest-logger.ts): the query's request id, and the task's.
      this.logger.warn({
        msg: `video task ${task.id}: could not record its state (${String(error)}); the reconciler will`,
        request_id: request.id,
        trace_id: request.trace?.traceId,
        task_id: task.id,
        submit_request_id: task.submitRequestId,
      });
    }
  }

  private finalEntry(task: VideoTask, status: string, reported: ReportedTask): Omit<SettlementEntry, 'settledAt'> {
    if (status !== 'succeeded') return unbilled(status);
    const basis: EstimateBasis = {
      durationSeconds: reported.durationSeconds ?? task.durationSeconds,
      resolution: reported.resolution ?? task.resolution,
      draft: task.draft,
      videoInput: task.videoInput,
      inputImageCount: task.inputImageCount,
    };
    const figures = reported.figures ?? estimatedFigures(task.interface, basis);
    // The prices of the submit; a task from before they were kept, at the catalog's, or the reservation for a model gone from it.
    const pricing = task.pricing ? pricingOf(task.pricing) : this.catalog.find(task.model);
    const settlement = reported.figures ? 'usage' : 'estimated';
    if (!pricing) return { status, settlement, costNano: task.reservedNano, figures, errorCode: null, ...UNPRICED };
    const priceBasis = priceBasisOf(basis);
    return {
      status,
      settlement,
      costNano: recordCostOf(figures, pricing, priceBasis),
      figures,
      errorCode: null,
      priceSheet: priceSheetOf(pricing),
      priceBasis,
    };
  }

  /** The figures priced with these prices' tiers for this task's resolution and video input; undefined without prices. */
  private costOf(pricing: Pricing | undefined, figures: UsageFigures, basis: EstimateBasis): bigint | undefined {
    return pricing && recordCostOf(figures, pricing, priceBasisOf(basis));
  }

  private async settle(task: VideoTask, entry: SettlementEntry): Promise<void> {
    const moved = await this.store.settle(task, entry);
    if (!moved) return; // settled already, by another look or replica
    this.observe(task, moved);
    this.metrics.videoTaskSettled(task.model, entry.settlement, entry.status, entry.figures, entry.costNano);
  }

  /** The task's owner and key balances as a money statement left them. */
  private observe(task: { ownerId: string; keyId: string }, moved: Moved): void {
    this.quota.observed(task.ownerId, moved.owner);
    this.quota.observedKey(task.keyId, moved.key);
  }

  /** Gives a task's reservation back; a failure is the submit's business, so its line bears the submit's request id. */
  private async release(task: { id: string; submitRequestId: string }): Promise<void> {
    try {
      const released = await this.store.abandon(task.id);
      if (released) this.observe(released, released);
    } catch (error) {
      this.logger.warn({
        msg: `video task ${task.id}: reservation not released yet (${String(error)}); the reconciler will release it`,
        request_id: task.submitRequestId,
        task_id: task.id,
      });
    }
  }

  /** When to poll again after `attempt` looks: the first delay, doubled each time, capped. */
  private nextPoll(now: number, attempt: number): Date {
    const delay = Math.min(this.settings.maxPollDelayMs, this.settings.firstPollDelayMs * 2 ** Math.min(Math.max(attempt, 0), 20));
    return new Date(now + delay);
  }
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** What a video's price depends on beyond its figures, as its record keeps it. */
function priceBasisOf(basis: Pick<EstimateBasis, 'draft' | 'resolution' | 'videoInput'>): PriceBasis {
  const resolution = pricedResolution(basis);
  return { ...(resolution === undefined ? {} : { resolution }), video_input: basis.videoInput };
}

/** A settlement not priced from figures (not billed, or the reservation charged): no sheet. */
const UNPRICED = { priceSheet: null, priceBasis: null } as const;

function unbilled(status: string): Omit<SettlementEntry, 'settledAt'> {
  return { status, settlement: 'not_billed', costNano: 0n, figures: undefined, errorCode: `task_${status}`, ...UNPRICED };
}

function notCancellable(status: string): GatewayError {
  return new GatewayError('invalid_request', `The task is ${status}; only queued tasks can be cancelled.`);
}

/** Writes a whole answer; `headers` (a new object of the caller's) gets the body's type and length. */
function writeWhole(response: ServerResponse, status: number, headers: OutgoingHttpHeaders, type: string, body: Buffer): void {
  headers['content-type'] = type;
  headers['content-length'] = body.length;
  response.writeHead(status, headers);
  response.end(body);
}

function send(reply: FastifyReply, answer: TaskAnswer, task: VideoTask): void {
  void reply
    .code(answer.statusCode)
    .header('content-type', answer.contentType)
    .send(withGatewayId(answer.body, task.upstreamTaskId!, task.id));
}
