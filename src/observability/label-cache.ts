/**
 * prom-client children by label values, made once: `labels()` builds a labels object (and, for
 * histograms, a closure) on every call. Label values must come from bounded sets (interfaces,
 * models and lines of the configuration, statuses, figure names), never from request data.
 */
export class LabelCache<Child> {
  private readonly children = new Map<string, Child>();

  constructor(private readonly make: (...values: string[]) => Child) {}

  of(...values: string[]): Child {
    const key = values.join('\u0000');
    let child = this.children.get(key);
    if (child === undefined) {
      child = this.make(...values);
      this.children.set(key, child);
    }
    return child;
  }
}
