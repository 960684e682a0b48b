import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { RecordSource } from './quota-owner.entity';

/** A gateway key. Only its SHA-256 is stored; the plaintext is never kept. */
@Entity('api_key')
export class ApiKey {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Index('api_key_sha256_unique', { unique: true })
  @Column({ name: 'key_sha256', type: 'char', length: 64 })
  keySha256!: string;

  /** A short, non-secret prefix to recognise the key in lists and logs. */
  @Column({ name: 'display_prefix', type: 'varchar', length: 32 })
  displayPrefix!: string;

  @Index('api_key_owner')
  @Column({ name: 'owner_id', type: 'varchar', length: 128 })
  ownerId!: string;

  /** Model ids the key may use, or `["*"]`. */
  @Column({ type: 'jsonb' })
  models!: string[];

  @Column({ type: 'boolean', default: true })
  enabled!: boolean;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ type: 'varchar', length: 16, default: 'config' })
  source!: RecordSource;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
