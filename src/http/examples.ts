/**
 * The ids and secrets the OpenAPI examples use (`examples` next to each schema), one value each,
 * so that examples of different operations tell one story: the project `prj_…` created in one
 * answer is the one the next request names. test/http/openapi-examples.test.ts sends every
 * request example to a live service, putting its own fixtures in place of these values.
 */
export const EXAMPLE = {
  organisationId: 'org_4f8k2m9x7q1w5e3r',
  teamId: 'org_9t2w6y1u3i5o7p8a',
  personId: 'usr_2b7n4m8k1j6h3g5f',
  otherPersonId: 'usr_8c3v5x7z9l2k4j6h',
  projectId: 'prj_7k2m9x4q1w8e5r3t',
  deviceId: 'dev_5g8h2j4k6l9z1x3c',
  joinKeyId: 'jk_3d6f9g2h5j8k1l4z',
  runId: 'run_6y9u2i4o7p1a3s5d',
  invitationId: 'inv_1q4w7e2r5t8y3u6i',
  userCode: 'BCDF-GHJK',
  deviceCode: 'platform_dc_Zk3v9QmX2pL7wR4tY8nB1cF6hJ0sD5gAe2Wq7Rt1Yuk',
  accessToken: 'platform_at_Qw8eR2tY6uI0oP4aS9dF3gH7jK1lZ5xCv8Bn2Mqk7Pz',
  refreshToken: 'platform_rt_Mn4bV8cX2zL6kJ0hG5fD9sA3pO7iU1yTr5Ew9Qak7Pz',
  joinKey: 'platform_jk_3f9a1c7e5b2d8046_Hg6fD2sA9pO5iU1yT7rE3wQ8mN4bV0cXz2Lk5Jhk7Pz',
  email: 'ana@example.com',
  workspaceId: 'ws-checkout',
  jkt: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs',
} as const;
