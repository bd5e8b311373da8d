/**
 * The attributes a webhook create must send; the last three may be null (docs/api.md,
 * The webhook resource).
 */
export const REQUIRED_ATTRIBUTES = [
  'name',
  'url',
  'headers',
  'events',
  'custom_payload',
  'http_basic_user',
  'http_basic_password',
] as const;
