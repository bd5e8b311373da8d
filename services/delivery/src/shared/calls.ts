import type { StoredEvent, WebhookRecord } from '@herald/store';

/**
 * A call whose first attempt this process makes, with its event and its webhook as read then:
 * one the match worker just created, or one an outcome released from its lane.
 */
export interface NewCall {
  id: string;
  webhookId: string;
  event: StoredEvent;
  /** null: deleted meanwhile. */
  webhook: WebhookRecord | null;
  /** Placed in a lane (flow control): its attempt claims it first (claimFlowCall)… */
  placed: boolean;
  /**
   * …unless the outcome that released it claimed it already (recordFlowOutcomes): then, the
   * events it carries.
   */
  claimed: readonly string[] | null;
}
