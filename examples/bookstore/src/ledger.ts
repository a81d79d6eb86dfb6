/** How many of a customer's latest orders the bookstore's "my orders" page shows. */
export const LIST_LENGTH = 20;

/**
 * What each customer has been told is saved: the ids of their acknowledged orders, oldest first.
 * The only source of truth for "should be in the list": the client's own acknowledgements, never
 * a database read.
 */
export class OrderLedger {
  private readonly byCustomer = new Map<number, number[]>();

  /** Record an order whose INSERT was acknowledged (committed) to the customer. */
  acknowledge(customer: number, orderId: number): void {
    let ids = this.byCustomer.get(customer);
    if (!ids) {
      ids = [];
      this.byCustomer.set(customer, ids);
    }
    ids.push(orderId);
  }

  /** The acknowledged orders that must appear in the customer's latest-`LIST_LENGTH` list. */
  expected(customer: number): readonly number[] {
    const ids = this.byCustomer.get(customer);
    return ids ? ids.slice(-LIST_LENGTH) : [];
  }

  /** Ids the customer should see but `listed` lacks (empty when the list is complete). */
  missingFrom(customer: number, listed: readonly number[]): number[] {
    const expected = this.expected(customer);
    if (expected.length === 0) return [];
    const seen = new Set(listed);
    return expected.filter((id) => !seen.has(id));
  }
}
