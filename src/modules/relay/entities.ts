import { EntitySchema } from 'typeorm';

/**
 * The service's signing keys (ES256), shared by every replica through the database. The private
 * half is sealed (AES-256-GCM) with a key derived from SIGNING_KEYS_SECRET, bound to the key id;
 * the public half is what `GET /.well-known/jwks.json` publishes. Keys take turns by generation
 * (unique: two replicas rotating at once make one key, not two).
 */
export interface SigningKeyRecord {
  kid: string;
  generation: number;
  /** The public JWK, JSON. */
  publicJwk: string;
  /** `v1.<iv>.<ciphertext>.<tag>` (base64url) of the private JWK. */
  privateSealed: string;
  createdAt: Date;
  /** When it starts signing; published from `createdAt` on, so verifiers know it first. */
  activatesAt: Date;
}

export const SigningKeyEntity = new EntitySchema<SigningKeyRecord>({
  name: 'SigningKey',
  tableName: 'signing_keys',
  columns: {
    kid: { type: 'varchar', length: 40, primary: true },
    generation: { type: 'integer' },
    publicJwk: { type: 'varchar', length: 500, name: 'public_jwk' },
    privateSealed: { type: 'varchar', length: 1000, name: 'private_sealed' },
    createdAt: { type: 'datetime', precision: 3, name: 'created_at' },
    activatesAt: { type: 'datetime', precision: 3, name: 'activates_at' },
  },
  indices: [{ name: 'signing_keys_generation', columns: ['generation'], unique: true }],
});
