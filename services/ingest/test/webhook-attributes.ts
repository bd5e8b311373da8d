/** The attributes a webhook create must send; the last three may be null (API.md §4.2). */
export const REQUIRED_ATTRIBUTES = [
  'name',
  'url',
  'headers',
  'events',
  'custom_payload',
  'http_basic_user',
  'http_basic_password',
] as const;
