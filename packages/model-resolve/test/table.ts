// The family-resolution expectation table (upstream test_newest_in_family), shared by the library and bin tests.
const CLAUDE_1_2_16 = [
  'claude-opus-5-5-high',
  'claude-sonnet-5-5-low',
  'claude-sonnet-5-5-medium',
  'claude-sonnet-5-5-high',
  'gpt-oss-120b-medium',
];

export const NEWEST_IN_FAMILY_TABLE: ReadonlyArray<[template: string, listing: string[], expected: string]> = [
  ['gemini-3.9-flash-high', ['gemini-3.9-flash-high', 'gemini-3.10-flash-high'], 'gemini-3.10-flash-high'],
  ['gemini-3.8-flash-high', ['gemini-3.8-flash-high', 'gemini-4-flash-high'], 'gemini-4-flash-high'],
  ['gemini-3.8-flash-high', ['gemini-3.8-flash-high', 'gemini-3.8.1-flash-high'], 'gemini-3.8.1-flash-high'],
  ['gemini-3.8-flash-high', ['gemini-3.8-flash-lite-high', 'gemini-3.1-pro-high'], 'gemini-3.8-flash-high'],
  [
    'gemini-3.8-flash-high',
    ['gemini-3.8-flash-medium', 'gemini-3.8-flash-high', 'gemini-3.8-flash-low'],
    'gemini-3.8-flash-high',
  ],
  ['claude-sonnet-4-6', CLAUDE_1_2_16, 'claude-sonnet-5-5-high'],
  [
    'claude-sonnet-5-5-high',
    [...CLAUDE_1_2_16, 'claude-sonnet-5-6-medium', 'claude-sonnet-5-6-high'],
    'claude-sonnet-5-6-high',
  ],
  ['gemini-3.8-flash-high', ['gemini-3.8-flash-medium', 'gemini-3.7-flash-high'], 'gemini-3.7-flash-high'],
  ['claude-sonnet-4-6', ['claude-sonnet-5-5', 'claude-sonnet-5-5-high'], 'claude-sonnet-5-5-high'],
  ['gemini-3.8-flash-high', ['gemini-3.9-flash-medium', 'gemini-3.9-flash-low'], 'gemini-3.9-flash-medium'],
  ['claude-sonnet-5-5-medium', ['claude-sonnet-5-6-high', 'claude-sonnet-5-6-medium'], 'claude-sonnet-5-6-medium'],
  ['claude-sonnet-5-5-low', ['claude-sonnet-5-6', 'claude-sonnet-5-6-high'], 'claude-sonnet-5-6-high'],
  ['claude-sonnet-5-5-low', ['claude-sonnet-5-6-medium', 'claude-sonnet-5-6'], 'claude-sonnet-5-6'],
  ['claude-sonnet-4-6', ['claude-sonnet-4-6', 'claude-sonnet-4-6-thinking'], 'claude-sonnet-4-6'],
  ['claude-opus-4-6-thinking', ['claude-opus-4-6', 'claude-opus-4-6-thinking'], 'claude-opus-4-6-thinking'],
  ['claude-opus-4-6-thinking', ['claude-opus-4-6', 'claude-opus-4-7-thinking'], 'claude-opus-4-7-thinking'],
  ['gemini-3.8-flash-high', [], 'gemini-3.8-flash-high'],
  ['gemini-3.8-flash-high', ['claude-sonnet-4-6'], 'gemini-3.8-flash-high'],
  ['unknown', ['unknown-2'], 'unknown'],
  ['not_a_model', ['not_a_model-2'], 'not_a_model'],
  ['gemini-3.8-flash-high', ['gemini-3-8-flash-high', 'gemini-3.8-flash-high'], 'gemini-3.8-flash-high'],
  ['gemini-3.8-flash-high', ['gemini-3.8-flash-high', 'gemini-3-8-flash-high'], 'gemini-3.8-flash-high'],
  ['gemini-3.7-flash-high', ['gemini-3-8-flash-high', 'gemini-3.8-flash-high'], 'gemini-3-8-flash-high'],
  ['gemini-3.7-flash-high', ['gemini-3.8-flash-high', 'gemini-3-8-flash-high'], 'gemini-3.8-flash-high'],
];
