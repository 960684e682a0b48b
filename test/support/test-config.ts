/** Keys of the standard test configuration (plaintext; the gateway stores their hashes). */
export const KEYS = {
  all: 'gk-test-all-models-0001',
  chatOnly: 'gk-test-chat-only-0002',
  disabled: 'gk-test-disabled-0003',
  expired: 'gk-test-expired-0004',
  poor: 'gk-test-poor-owner-0005',
  member: 'gk-test-member-0006',
} as const;

export const VENDOR_KEY = 'vendor-secret-line-key';

/**
 * The standard configuration of the e2e suites, as YAML so that every suite also goes through
 * the real loader. `simulator` is the upstream simulator's base URL; `dead` a port nothing
 * listens on.
 */
export function standardConfigYaml(simulator: string, dead = 'http://127.0.0.1:1'): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-dead
    base_url: ${dead}
    api_key: unused
    timeout_ms: 2000
  - id: line-narrow
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
    max_concurrency: 1
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions, responses]
    lines: [line-a]
    capabilities: { image_input: true }
    max_tokens: 16384
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: messages-model
    upstream_model: vendor-messages-2025-02
    interfaces: [messages]
    lines: [line-a]
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: embed-model
    upstream_model: vendor-embed-3
    interfaces: [embeddings]
    lines: [line-a]
    prices: { input_tokens: 0.02 }
  - id: failover-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-dead, line-b]
    prices: { input_tokens: 1, output_tokens: 1 }
  - id: dead-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-dead]
  - id: narrow-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-narrow]
  - id: image-model
    upstream_model: vendor-image-1
    interfaces: [images_a]
    lines: [line-a]
owners:
  - id: team-a
    kind: project
    budget: 100
  - id: team-poor
    kind: project
    budget: 0.000001
  - id: alice
    kind: member
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
  - key: ${KEYS.chatOnly}
    owner: team-a
    models: [chat-model]
  - key: ${KEYS.disabled}
    owner: team-a
    models: ["*"]
    enabled: false
  - key: ${KEYS.expired}
    owner: team-a
    models: ["*"]
    expires_at: 2020-01-01T00:00:00Z
  - key: ${KEYS.poor}
    owner: team-poor
    models: ["*"]
  - key: ${KEYS.member}
    owner: alice
    models: ["*"]
`;
}

/**
 * One model of each interface on one line of the simulator, followed by `ownersAndKeys` (YAML
 * from `owners:` on): the configuration of the suites that call every entry point alike.
 */
export function oneModelPerInterfaceYaml(simulator: string, ownersAndKeys: string): string {
  const model = (id: string, upstream: string, interfaces: string) =>
    `  - { id: ${id}, upstream_model: ${upstream}, interfaces: [${interfaces}], lines: [line-a] }`;
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
${model('chat-model', 'vendor-chat-2025-01', 'chat_completions, responses')}
${model('messages-model', 'vendor-messages-2025-02', 'messages')}
${model('embed-model', 'vendor-embed-3', 'embeddings')}
${model('image-a', 'vendor-image-a-1', 'images_a')}
${model('image-b', 'vendor-image-b-4', 'images_b')}
${model('image-c', 'vendor-image-c-flash', 'images_c')}
${model('speech', 'vendor-speech-02-hd', 'speech_c')}
${model('video-c', 'vendor-video-c-2', 'video_c')}
${model('video-b', 'vendor-video-b-1', 'video_b')}
${ownersAndKeys.trim()}
`;
}
