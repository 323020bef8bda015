/**
 * The members of one pool that can be leased right now, least recently used first: a doubly-linked list
 * sorted by `lastUsedAt` (-Infinity = never used, so those come first), then `seq` (arrival order), so the
 * order is total and the same whatever sequence of calls built it.
 *
 * Why a list and not a heap: with a target, acquire walks from the head past members that are in that
 * target's cooldown without removing them — a list walks in O(skipped + 1), a heap would pop and re-push.
 *
 * Inserts walk from the tail. Almost every insert is a member leaving pool cooldown, and those leave in
 * release order (one cooldown per pool), so they belong at the tail: O(1). A member that turns eligible
 * again after a long time may belong near the head: O(n), but that only happens on health transitions.
 */
export interface ListNode {
    lastUsedAt: number;
    seq: number;
    prev: ListNode | undefined;
    next: ListNode | undefined;
    inList: boolean;
}

export class ReadyList<T extends ListNode> {
    private head: T | undefined;
    private tail: T | undefined;
    private count = 0;

    get size(): number {
        return this.count;
    }

    /** The least recently used member. */
    first(): T | undefined {
        return this.head;
    }

    /** The member after `node` in LRU order. */
    after(node: T): T | undefined {
        return node.next as T | undefined;
    }

    /** Inserts keeping the (lastUsedAt, seq) order. */
    insert(node: T): void {
        if (node.inList) return;
        let at = this.tail;
        while (at && (at.lastUsedAt > node.lastUsedAt || (at.lastUsedAt === node.lastUsedAt && at.seq > node.seq)))
            at = at.prev as T | undefined;
        // Insert after `at` (or at the head when every member is newer).
        node.prev = at;
        node.next = at ? at.next : this.head;
        if (node.next) node.next.prev = node;
        else this.tail = node;
        if (at) at.next = node;
        else this.head = node;
        node.inList = true;
        this.count++;
    }

    /** O(1); a no-op when the node is not in the list. */
    remove(node: T): void {
        if (!node.inList) return;
        if (node.prev) node.prev.next = node.next;
        else this.head = node.next as T | undefined;
        if (node.next) node.next.prev = node.prev;
        else this.tail = node.prev as T | undefined;
        node.prev = node.next = undefined;
        node.inList = false;
        this.count--;
    }

    /** Removes everything and returns the former members in order. */
    clear(): T[] {
        const out: T[] = [];
        for (let n = this.head; n;) {
            const next = n.next as T | undefined;
            n.prev = n.next = undefined;
            n.inList = false;
            out.push(n);
            n = next;
        }
        this.head = this.tail = undefined;
        this.count = 0;
        return out;
    }
}
