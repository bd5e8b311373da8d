export {
  ConfigError,
  commonEnv,
  httpEnv,
  parseClusterNodes,
  parseEnv,
  replicaEnv,
  tracingEnv,
} from './config.js';
export { REDACT_PATHS, createLogger, type Logger } from './logger.js';
export { createMetrics, type Metrics } from './metrics.js';
export {
  closeRedis,
  connectRedis,
  createRedis,
  createRedisCluster,
  isCluster,
  type Cluster,
  type Redis,
  type RedisClient,
  type RedisClusterTarget,
  type RedisTarget,
} from './redis.js';
export { sendEach, webhookKey } from './redis-slots.js';
export { Lifecycle, closeServer, runShutdownStep, type SignalSettings } from './shutdown.js';
export { settleWithin } from './settle-within.js';
export { context, type RequestContext } from './http/context.js';
export { TokenVerifier, authenticate, requireRole, type Principal } from './http/auth.js';
export { EnvironmentResolver, selectEnvironment } from './http/environments.js';
export { errorHandler, toApiError } from './http/errors.js';
export { acceptsJson, isJsonContentType } from './http/headers.js';
export { healthOperations, healthRouter, type HealthDeps } from './http/health.js';
export {
  buildOpenApiDocument,
  requestDocument,
  type ApiOperation,
  type OpenApiDocument,
} from './http/openapi.js';
export { parseQueryString, QUERY_MAX_DEPTH, QUERY_MAX_PARAMS } from './http/query.js';
export { findJsonProblem, JSON_MAX_DEPTH, type JsonProblem } from './http/json-walk.js';
export { RateLimiter, type RateLimitResult, type RateLimits } from './http/rate-limit.js';
export {
  createApiApp,
  createOpsApp,
  shareApiState,
  type ApiAppDeps,
  type SharedApiDeps,
  type HttpSettings,
} from './http/create-api-app.js';
export { answerClientErrors, listen } from './http/listen.js';
export {
  httpSettings,
  openCoordination,
  openDatabase,
  openRedis,
  openReplicaDb,
  prepareCoordination,
  prepareDatabase,
  type CoordinationConfig,
  registerAdminToken,
  type CommonConfig,
  type HttpConfig,
} from './boot.js';
export {
  DELIVER_JOB_OPTIONS,
  EnqueueUnavailableError,
  RESEND_JOB_OPTIONS,
  createDeliverQueue,
  createEventMatchQueue,
  createQueueWorker,
  enqueueDeliveries,
  enqueueDueCalls,
  enqueueEventMatches,
  enqueueResend,
  enqueueRetry,
  EventMatchEnqueuer,
  type EventWrite,
  eventMatchJobId,
  queuePrefix,
  requeueEventMatches,
  type DeliverCall,
  type DeliverQueue,
  type EventMatchQueue,
  type MatchJobRetries,
} from './queues.js';
export { LocalMatchHandOff, type LocalMatcher } from './local-match.js';
export {
  DeploymentConflictError,
  claimPrefix,
  deploymentKey,
  type DeploymentClaim,
} from './deployment.js';
export {
  createPostgresCoordination,
  createRedisCoordination,
  migrateQueues,
  notifyChannel,
  queueSchema,
  type Coordination,
  type PostgresCoordination,
  type RedisCoordination,
  type RequestLease,
  type Subscription,
} from './coordination.js';
export { ssrfEnv } from './ssrf-env.js';
export { contextOf, startTracing, traceparentOf, tracer, type TracingConfig } from './tracing.js';
export { postgresProblem, redisProblem, redisReady, warnOncePerCause } from './dependencies.js';
export { runMain, serveHttp, startService } from './service.js';
export {
  runProcess,
  startRoles,
  type Infrastructure,
  type ProcessConfig,
  type ProcessHost,
  type Prepared,
  type Role,
  type RoleApi,
  type RoleName,
} from './roles.js';
