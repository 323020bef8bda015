/**
 * An indexed binary min-heap. Items carry their own position (`heapIndex`, -1 when outside any heap) so
 * removing an arbitrary item — a cooling member turning ineligible, a lease released before its TTL —
 * is O(log n) instead of a linear search. One item belongs to at most one heap at a time.
 */
export interface HeapItem {
    heapIndex: number;
}

export class MinHeap<T extends HeapItem> {
    private readonly items: T[] = [];

    /** @param key the ordering key (smaller first); must not change while the item is in the heap. */
    constructor(private readonly key: (item: T) => number) {}

    get size(): number {
        return this.items.length;
    }

    /** The smallest item, or undefined when empty. O(1). */
    peek(): T | undefined {
        return this.items[0];
    }

    /** O(log n). */
    push(item: T): void {
        item.heapIndex = this.items.length;
        this.items.push(item);
        this.up(item.heapIndex);
    }

    /** Removes and returns the smallest item. O(log n). */
    pop(): T | undefined {
        const top = this.items[0];
        if (top) this.remove(top);
        return top;
    }

    /** Removes `item` wherever it is; a no-op when it is not in this heap. O(log n). */
    remove(item: T): void {
        const i = item.heapIndex;
        if (i < 0 || this.items[i] !== item) return;
        const last = this.items.pop()!;
        item.heapIndex = -1;
        if (last === item) return;
        this.items[i] = last;
        last.heapIndex = i;
        // The moved item may belong above or below its new slot.
        this.up(i);
        this.down(last.heapIndex);
    }

    /** Read-only view for the rare full scans (exact Retry-After with a target, snapshots). */
    values(): readonly T[] {
        return this.items;
    }

    /** Empties the heap, marking every item as outside it. */
    clear(): T[] {
        const all = this.items.splice(0);
        for (const it of all) it.heapIndex = -1;
        return all;
    }

    private up(i: number): void {
        const items = this.items;
        const item = items[i];
        const k = this.key(item);
        while (i > 0) {
            const p = (i - 1) >> 1;
            if (this.key(items[p]) <= k) break;
            items[i] = items[p];
            items[i].heapIndex = i;
            i = p;
        }
        items[i] = item;
        item.heapIndex = i;
    }

    private down(i: number): void {
        const items = this.items;
        const n = items.length;
        const item = items[i];
        const k = this.key(item);
        for (;;) {
            const l = 2 * i + 1;
            if (l >= n) break;
            const r = l + 1;
            const c = r < n && this.key(items[r]) < this.key(items[l]) ? r : l;
            if (this.key(items[c]) >= k) break;
            items[i] = items[c];
            items[i].heapIndex = i;
            i = c;
        }
        items[i] = item;
        item.heapIndex = i;
    }
}
