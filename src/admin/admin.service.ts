import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { nanoToNumber } from '../config/money';
import { ApiKeyRepository } from '../auth/api-key.repository';
import { UsageRecord } from '../metering/usage-record.entity';
import { UsageWriter } from '../metering/usage-writer.service';
import type { UsageDraft } from '../metering/usage-draft';

type StoredOrQueued = Omit<UsageDraft, 'usage'> & { usage: UsageDraft['usage'] | null };

/** A usage record as the admin API shows it: amounts in decimal currency units. */
function usageView(record: StoredOrQueued, written: boolean) {
  return {
    request_id: record.requestId,
    client_request_id: record.clientRequestId,
    key_id: record.keyId,
    owner_id: record.ownerId,
    model: record.model,
    interface: record.interface,
    line: record.line,
    translated_to: record.translatedTo,
    status: record.status,
    error_code: record.errorCode,
    stream: record.stream,
    usage: record.usage ?? null,
    cost: nanoToNumber(record.costNano),
    cost_nano: record.costNano.toString(),
    started_at: record.startedAt.toISOString(),
    duration_ms: record.durationMs,
    upstream_headers_ms: record.upstreamHeadersMs,
    written,
  };
}

@Injectable()
export class AdminService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly keys: ApiKeyRepository,
    private readonly usage: UsageWriter,
  ) {}

  async usageRecord(requestId: string) {
    const queued = this.usage.findQueued(requestId);
    if (queued) return usageView(queued, false);
    const stored = await this.dataSource.getRepository(UsageRecord).findOneBy({ requestId });
    if (!stored) throw new GatewayError('not_found', `No usage record has the request id ${JSON.stringify(requestId)}.`);
    return usageView(stored, true);
  }

  async owner(id: string) {
    const owner = await this.keys.findOwner(id);
    if (!owner) throw new GatewayError('not_found', `No quota owner has the id ${JSON.stringify(id)}.`);
    return {
      id: owner.id,
      kind: owner.kind,
      budget: owner.budgetNano === null ? null : nanoToNumber(owner.budgetNano),
      spent: nanoToNumber(owner.spentNano),
      reserved: nanoToNumber(owner.reservedNano),
      source: owner.source,
    };
  }
}
