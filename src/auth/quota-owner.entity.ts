import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../database/bigint.transformer';
import type { OwnerKind } from '../config/gateway-config';

export type RecordSource = 'config' | 'admin';

/** Who pays: a member (personal keys) or a project. Money in nano-units (1e-9 currency). */
@Entity('quota_owner')
export class QuotaOwner {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id!: string;

  @Column({ type: 'varchar', length: 16 })
  kind!: OwnerKind;

  /** Null means unlimited. */
  @Column({ name: 'budget_nano', type: 'bigint', nullable: true, transformer: bigintTransformer })
  budgetNano!: bigint | null;

  @Column({ name: 'spent_nano', type: 'bigint', default: 0, transformer: bigintTransformer })
  spentNano!: bigint;

  @Column({ name: 'reserved_nano', type: 'bigint', default: 0, transformer: bigintTransformer })
  reservedNano!: bigint;

  @Column({ type: 'varchar', length: 16, default: 'config' })
  source!: RecordSource;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
