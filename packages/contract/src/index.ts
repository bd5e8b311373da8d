export {
  ApiError,
  ERROR_STATUS,
  errorId,
  renderErrorEnvelope,
  type ErrorCode,
  type ErrorDetails,
  type ErrorEntry,
  type ErrorEnvelope,
  type FieldErrorDetails,
  type ValidationCode,
} from './errors.js';
export { QUEUE_EVENT_MATCH, QUEUE_WEBHOOK_DELIVER, CHANNEL_WEBHOOKS_CHANGED } from './queues.js';
export { ROLES, isRole, type Role } from './roles.js';
