import type { ApiRequest, RequestOptions, Transport } from './http.ts';

/** One page of a list: newest first, `nextCursor` is the `startingAfter` of the next page. */
export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** A list the gateway returns whole (no paging). */
export interface List<T> {
  data: T[];
}

/**
 * What a paged `list` call returns: `await` it for the first page, or `for await` over it for
 * every item of every page (the next page is fetched when the previous one is used up, with
 * `startingAfter` set to its `nextCursor`). Nothing is requested until one of the two happens.
 */
export class PagePromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  readonly #transport: Transport;
  readonly #request: ApiRequest;
  readonly #options: RequestOptions | undefined;
  #first: Promise<Page<T>> | undefined;

  constructor(transport: Transport, request: ApiRequest, options: RequestOptions | undefined) {
    this.#transport = transport;
    this.#request = request;
    this.#options = options;
  }

  #load(): Promise<Page<T>> {
    return (this.#first ??= this.#transport.request<Page<T>>(this.#request, this.#options));
  }

  // biome-ignore lint/suspicious/noThenProperty: a list call is awaitable (the first page) and async-iterable (every item), as Stripe's is
  then<A = Page<T>, B = never>(
    onFulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#load().then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page = await this.#load();
    for (;;) {
      yield* page.data;
      if (!page.hasMore || !page.nextCursor) return;
      page = await this.#transport.request<Page<T>>({ ...this.#request, query: { ...this.#request.query, startingAfter: page.nextCursor } }, this.#options);
    }
  }
}
