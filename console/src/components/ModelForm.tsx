import { useRef, useState } from 'preact/hooks';
import { changeModel, createModel, type ModelBody } from '../api';
import { Checks, positiveInteger, priceNamesIn, problemsByItem, problemsByPart, wholeNumber } from '../problems';
import {
  type CatalogModelView,
  INTERFACE_NAMES,
  lineItemOf,
  METERED_PRICES,
  type ModelLine,
  type ModelRetry,
  PRICE_NAMES,
  PRICE_UNITS,
  type PriceName,
  RETRY_FIELDS,
} from '../types';
import { CatalogForm, type CatalogFormProps, IdControl, useCatalogForm } from './CatalogForm';
import { describedBy, FieldProblem } from './FormProblems';

const FIELDS = ['id', 'upstream_model', 'interfaces', 'lines', 'retry', 'capabilities', 'max_tokens', 'prices', 'price_tiers'] as const;

/** The gateway's bounds (src/config/model-lines.ts). */
const MAX_LINE_WEIGHT = 1000;
const MAX_RETRY_ATTEMPTS = 10;

/** A chosen line's own terms as typed; empty: none. */
interface LineTerms {
  weight: string;
  model: string;
}

type RetryName = (typeof RETRY_FIELDS)[number];

const RETRY_INPUTS: Record<RetryName, { label: string; hint: string; problem: string; max: number }> = {
  attempts: {
    label: 'Retry attempts',
    hint: `Rounds through the lines again after every line failed, 0 to ${MAX_RETRY_ATTEMPTS}.`,
    problem: `must be a whole number from 0 to ${MAX_RETRY_ATTEMPTS}`,
    max: MAX_RETRY_ATTEMPTS,
  },
  backoff_ms: {
    label: 'Back-off (ms)',
    hint: "The first retry's longest wait, doubled for each next retry; the wait is drawn at random below it.",
    problem: 'must be a whole number of milliseconds, at least 0',
    max: Number.MAX_SAFE_INTEGER,
  },
  max_backoff_ms: {
    label: 'Max back-off (ms)',
    hint: "The longest wait; a vendor's Retry-After longer than it ends the retries.",
    problem: 'must be a whole number of milliseconds, at least 0',
    max: Number.MAX_SAFE_INTEGER,
  },
};

interface PriceRow {
  /** A stable key for the row, so typing in one row never moves another. */
  key: number;
  name: string;
  amount: string;
}

interface Draft {
  id: string;
  upstream_model: string;
  interfaces: string[];
  /** In the order they are tried. */
  lines: string[];
  /** The chosen lines' weights and model names, by line id. */
  terms: Record<string, LineTerms>;
  retry: Record<RetryName, string>;
  image_input: boolean;
  max_tokens: string;
  prices: PriceRow[];
  /** `price_tiers` as JSON text. */
  tiers: string;
}

let nextRowKey = 1;

const NO_TERMS: LineTerms = { weight: '', model: '' };

function draftOf(model: CatalogModelView | undefined): Draft {
  const prices = Object.entries(model?.prices ?? {}).map(([name, amount]) => ({ key: nextRowKey++, name, amount: String(amount) }));
  const lines = (model?.lines ?? []).map(lineItemOf);
  const text = (value: number | undefined) => (value === undefined ? '' : String(value));
  return {
    id: model?.id ?? '',
    upstream_model: model?.upstream_model ?? '',
    interfaces: [...(model?.interfaces ?? [])],
    lines: lines.map((line) => line.id),
    terms: Object.fromEntries(lines.map((line) => [line.id, { weight: text(line.weight), model: line.upstream_model ?? '' }])),
    retry: { attempts: text(model?.retry?.attempts), backoff_ms: text(model?.retry?.backoff_ms), max_backoff_ms: text(model?.retry?.max_backoff_ms) },
    image_input: model?.capabilities?.image_input ?? false,
    max_tokens: model?.max_tokens === undefined ? '' : String(model.max_tokens),
    prices: prices.length > 0 ? prices : [{ key: nextRowKey++, name: '', amount: '' }],
    tiers: JSON.stringify(model?.price_tiers ?? [], null, 2),
  };
}

/** The prices the chosen interfaces' calls can be billed at; the gateway refuses others. */
function meteredBy(interfaces: string[]): PriceName[] {
  const names = new Set<PriceName>();
  for (const name of interfaces) for (const price of METERED_PRICES[name as keyof typeof METERED_PRICES] ?? []) names.add(price);
  return PRICE_NAMES.filter((name) => names.has(name));
}

function unitOf(name: string): string | undefined {
  return Object.hasOwn(PRICE_UNITS, name) ? PRICE_UNITS[name as PriceName] : undefined;
}

/** The price rows as the `prices` mapping; amounts stay decimal strings, which the gateway converts exactly. */
function pricesOf(rows: PriceRow[], checks: Checks): Record<string, string> {
  const prices: Record<string, string> = {};
  for (const row of rows) {
    const name = row.name.trim();
    const amount = row.amount.trim();
    if (name === '' && amount === '') continue;
    if (name === '') checks.add(`prices: the amount ${amount} has no price name: give the figure it prices`);
    else if (amount === '') checks.add(`prices.${name}: give an amount (0 for free), or remove the row`);
    else if (Object.hasOwn(prices, name)) checks.add(`prices.${name}: named twice, keep one row`);
    else prices[name] = amount;
  }
  return prices;
}

/**
 * The chosen lines as the gateway reads them: a plain id for a line without terms, otherwise
 * `{ id, weight?, upstream_model? }`. Weights are checked as the gateway checks them, by the
 * line's place in the list.
 */
function linesOf(lines: string[], terms: Record<string, LineTerms>, checks: Checks): ModelLine[] {
  let weighted = false;
  let allZero = true;
  const items = lines.map((id, index): ModelLine => {
    const { weight: weightText, model: modelText } = terms[id] ?? NO_TERMS;
    const weight = checks.take(() =>
      wholeNumber(weightText, `lines[${index}].weight`, 0, MAX_LINE_WEIGHT, `must be a whole number from 0 to ${MAX_LINE_WEIGHT}`),
    );
    if (weightText.trim() !== '') weighted = true;
    // A line without a weight weighs 1 once any line has one.
    if (weightText.trim() === '' || weight !== 0) allZero = false;
    const model = modelText.trim();
    if (weight === undefined && model === '') return id;
    return { id, ...(weight === undefined ? {} : { weight }), ...(model === '' ? {} : { upstream_model: model }) };
  });
  if (weighted && allZero) checks.add('lines: at least one line needs a weight above 0');
  return items;
}

/** The retry fields given, or undefined when every input is empty (the gateway's settings then apply). */
function retryOf(retry: Record<RetryName, string>, checks: Checks): ModelRetry | undefined {
  const given: ModelRetry = {};
  for (const name of RETRY_FIELDS) {
    const value = checks.take(() => wholeNumber(retry[name], `retry.${name}`, 0, RETRY_INPUTS[name].max, RETRY_INPUTS[name].problem));
    if (value !== undefined) given[name] = value;
  }
  return Object.keys(given).length > 0 ? given : undefined;
}

function tiersOf(text: string): unknown[] {
  if (text.trim() === '') return [];
  let tiers: unknown;
  try {
    tiers = JSON.parse(text);
  } catch (error) {
    throw new Error(`price_tiers: not valid JSON (${error instanceof Error ? error.message : String(error)})`, { cause: error });
  }
  if (!Array.isArray(tiers)) throw new Error('price_tiers: must be a JSON list, [ … ]; [] for none');
  return tiers;
}

/**
 * A new model, or a change of one (`item` given), sent as a PATCH with the version read. Every
 * field is sent: `prices` and `price_tiers` replace the stored ones as a whole, and an emptied
 * max_tokens is sent as null, which removes it.
 */
export function ModelForm({
  item: model,
  lineIds,
  onSaved,
  onCancel,
  onReload,
}: CatalogFormProps<CatalogModelView> & {
  /** The catalog's line ids, offered as the model's lines; undefined while they load. */
  lineIds: string[] | undefined;
}) {
  const editing = model !== undefined;
  const [draft, setDraft] = useState<Draft>(() => draftOf(model));
  const form = useCatalogForm(FIELDS, editing);
  const { id, problems, field } = form;
  const badPrices = priceNamesIn(problems.fields.prices);
  const metered = meteredBy(draft.interfaces);
  const interfaceChoices = [...INTERFACE_NAMES, ...draft.interfaces.filter((name) => !(INTERFACE_NAMES as readonly string[]).includes(name))];
  const lineChoices = [...(lineIds ?? []), ...draft.lines.filter((line) => !lineIds?.includes(line))];
  const sentLines = useRef<string[]>([]);
  // A line's weight and model problems show at its inputs, the rest (and those of lines no longer chosen) at the group.
  const lineProblems = problemsByItem(problems.fields.lines, 'lines');
  const termProblems = (line: string, part: 'weight' | 'upstream_model') => lineProblems[`${sentLines.current.indexOf(line)}.${part}`];
  const atInputs = new Set(draft.lines.flatMap((line) => [`${sentLines.current.indexOf(line)}.weight`, `${sentLines.current.indexOf(line)}.upstream_model`]));
  const groupLineProblems = Object.entries(lineProblems).flatMap(([key, list]) => (atInputs.has(key) ? [] : list));
  const retryProblems = problemsByPart(problems.fields.retry, 'retry');

  const update = (change: Partial<Draft>) => setDraft((current) => ({ ...current, ...change }));
  const text = (name: 'id' | 'upstream_model' | 'max_tokens' | 'tiers') => (event: { currentTarget: { value: string } }) =>
    update({ [name]: event.currentTarget.value });
  /** Checking appends (a line is tried after those chosen before), unchecking removes (a line with its terms). */
  const toggle = (list: 'interfaces' | 'lines', value: string, on: boolean) =>
    setDraft((current) => {
      const terms = { ...current.terms };
      if (list === 'lines' && !on) delete terms[value];
      return { ...current, terms, [list]: on ? [...current[list].filter((item) => item !== value), value] : current[list].filter((item) => item !== value) };
    });
  const setTerms = (line: string, change: Partial<LineTerms>) =>
    setDraft((current) => ({ ...current, terms: { ...current.terms, [line]: { ...(current.terms[line] ?? NO_TERMS), ...change } } }));
  const setRow = (key: number, change: Partial<PriceRow>) =>
    setDraft((current) => ({ ...current, prices: current.prices.map((row) => (row.key === key ? { ...row, ...change } : row)) }));

  const addPrice = () => {
    const key = nextRowKey++;
    setDraft((current) => ({ ...current, prices: [...current.prices, { key, name: '', amount: '' }] }));
    setTimeout(() => form.ref.current?.querySelector<HTMLInputElement>(`[data-price-name="${key}"]`)?.focus());
  };
  const removePrice = (key: number) => {
    setDraft((current) => ({ ...current, prices: current.prices.filter((row) => row.key !== key) }));
    setTimeout(() => form.ref.current?.querySelector<HTMLButtonElement>('[data-add-price]')?.focus());
  };
  const moveUp = (line: string) => {
    setDraft((current) => {
      const index = current.lines.indexOf(line);
      if (index < 1) return current;
      const lines = [...current.lines];
      [lines[index - 1], lines[index]] = [lines[index], lines[index - 1]];
      return { ...current, lines };
    });
    // Focus follows the moved line; at the top it has no Move up button, so the line it passed takes focus.
    setTimeout(() => {
      const buttons = [...(form.ref.current?.querySelectorAll<HTMLButtonElement>('[data-move-up]') ?? [])];
      (buttons.find((button) => button.dataset.moveUp === line) ?? buttons[0])?.focus();
    });
  };

  const save = async () => {
    // Problems name a line by its place in the list sent, which the order may change after.
    sentLines.current = draft.lines;
    const checks = new Checks();
    if (draft.interfaces.length === 0) checks.add('interfaces: choose at least one interface');
    if (draft.lines.length === 0) checks.add('lines: choose at least one line');
    const lines = linesOf(draft.lines, draft.terms, checks);
    const retry = retryOf(draft.retry, checks);
    const maxTokens = checks.take(() => positiveInteger(draft.max_tokens, 'max_tokens', 'tokens'));
    const prices = pricesOf(draft.prices, checks);
    const tiers = checks.take(() => tiersOf(draft.tiers));
    checks.done();
    const fields: ModelBody = {
      upstream_model: draft.upstream_model.trim(),
      interfaces: draft.interfaces,
      lines,
      capabilities: { image_input: draft.image_input },
      prices,
      price_tiers: tiers,
    };
    if (model) {
      onSaved(await changeModel(model.id, model.version, { ...fields, retry: retry ?? null, max_tokens: maxTokens ?? null }));
    } else {
      const created = await createModel({
        id: draft.id.trim(),
        ...fields,
        ...(retry === undefined ? {} : { retry }),
        ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
      });
      form.ref.current?.reset();
      setDraft(draftOf(undefined));
      onSaved(created);
    }
  };

  return (
    <CatalogForm kind="model" item={model} form={form} save={save} onCancel={onCancel} onReload={onReload}>
      <div class="form-row">
        {!editing && (
          <IdControl kind="model" form={form} value={draft.id} onInput={text('id')}>
            The name clients call, such as <code>text-model-2</code>.
          </IdControl>
        )}
        <div class="control">
          <label for={`${id}-upstream_model`}>Upstream model</label>
          <input
            id={`${id}-upstream_model`}
            ref={form.first}
            type="text"
            required
            autoComplete="off"
            spellcheck={false}
            value={draft.upstream_model}
            onInput={text('upstream_model')}
            {...field('upstream_model', `${id}-upstream_model-hint`)}
          />
          <p id={`${id}-upstream_model-hint`} class="hint">
            The model name the vendor expects.
          </p>
          <FieldProblem id={`${id}-upstream_model-problem`} problems={problems.fields.upstream_model} />
        </div>
        <div class="control control-narrow">
          <label for={`${id}-max_tokens`}>Max tokens</label>
          <input
            id={`${id}-max_tokens`}
            type="text"
            inputMode="numeric"
            autoComplete="off"
            value={draft.max_tokens}
            onInput={text('max_tokens')}
            {...field('max_tokens', `${id}-max_tokens-hint`)}
          />
          <p id={`${id}-max_tokens-hint`} class="hint">
            Optional.
          </p>
          <FieldProblem id={`${id}-max_tokens-problem`} problems={problems.fields.max_tokens} />
        </div>
      </div>

      <fieldset {...field('interfaces', `${id}-interfaces-hint`)}>
        <legend>Interfaces</legend>
        <p id={`${id}-interfaces-hint`} class="hint">
          The APIs clients may call the model through.
        </p>
        <div class="checks checks-plain">
          {interfaceChoices.map((name, index) => (
            <div class="check" key={name}>
              <input
                id={`${id}-interface-${index}`}
                type="checkbox"
                checked={draft.interfaces.includes(name)}
                onChange={(event) => toggle('interfaces', name, event.currentTarget.checked)}
              />
              <label for={`${id}-interface-${index}`}>{name}</label>
            </div>
          ))}
        </div>
        <FieldProblem id={`${id}-interfaces-problem`} problems={problems.fields.interfaces} />
      </fieldset>

      <fieldset {...describedBy(groupLineProblems, `${id}-lines-problem`, `${id}-lines-hint`)} aria-busy={lineIds === undefined}>
        <legend>Lines</legend>
        <p id={`${id}-lines-hint`} class="hint">
          The upstream lines that serve the model, tried in the order below when one fails.
        </p>
        <div class="checks checks-plain">
          {lineChoices.map((line, index) => (
            <div class="check" key={line}>
              <input
                id={`${id}-line-${index}`}
                type="checkbox"
                checked={draft.lines.includes(line)}
                onChange={(event) => toggle('lines', line, event.currentTarget.checked)}
              />
              <label for={`${id}-line-${index}`}>{line}</label>
            </div>
          ))}
        </div>
        {lineIds === undefined && <p class="hint">Loading lines…</p>}
        {lineIds !== undefined && lineChoices.length === 0 && <p class="hint">The catalog has no lines yet: add one first.</p>}
        {draft.lines.length > 0 && (
          <div class="line-order">
            <p id={`${id}-order`} class="small-heading">
              Tried in this order
            </p>
            <ol aria-labelledby={`${id}-order`}>
              {draft.lines.map((line, index) => {
                // Ids by the line's place among the choices, which a move leaves as it is.
                const at = `${id}-line-${lineChoices.indexOf(line)}`;
                const terms = draft.terms[line] ?? NO_TERMS;
                const weightProblems = termProblems(line, 'weight');
                const modelProblems = termProblems(line, 'upstream_model');
                return (
                  <li key={line}>
                    <span>{line}</span>
                    {index > 0 && (
                      <button type="button" class="button-secondary button-small" data-move-up={line} onClick={() => moveUp(line)}>
                        Move up<span class="visually-hidden"> {line}</span>
                      </button>
                    )}
                    <div class="form-row">
                      <div class="control control-narrow">
                        <label for={`${at}-weight`}>
                          Weight<span class="visually-hidden"> of {line}</span>
                        </label>
                        <input
                          id={`${at}-weight`}
                          type="text"
                          inputMode="numeric"
                          autoComplete="off"
                          value={terms.weight}
                          onInput={(event) => setTerms(line, { weight: event.currentTarget.value })}
                          {...describedBy(weightProblems, `${at}-weight-problem`, `${id}-weight-hint`)}
                        />
                      </div>
                      <div class="control">
                        <label for={`${at}-model`}>
                          Model on this line<span class="visually-hidden"> ({line})</span>
                        </label>
                        <input
                          id={`${at}-model`}
                          type="text"
                          autoComplete="off"
                          spellcheck={false}
                          value={terms.model}
                          onInput={(event) => setTerms(line, { model: event.currentTarget.value })}
                          {...describedBy(modelProblems, `${at}-model-problem`, `${id}-line-model-hint`)}
                        />
                      </div>
                    </div>
                    {/* Under the row rather than in its narrow column, where a problem would wrap word by word. */}
                    <FieldProblem id={`${at}-weight-problem`} problems={weightProblems} />
                    <FieldProblem id={`${at}-model-problem`} problems={modelProblems} />
                  </li>
                );
              })}
            </ol>
          </div>
        )}
        {/* Under the list, as a control's hint is under it; every weight and model input names its hint. */}
        {draft.lines.length > 0 && (
          <>
            <p id={`${id}-weight-hint`} class="hint">
              Weight (optional): a call's first line is drawn by weight, then the others are tried in this order. 0: failover only; empty: 1 when any line has a
              weight. No weights: always in this order.
            </p>
            <p id={`${id}-line-model-hint`} class="hint">
              Model on this line (optional): the model's name on that line, when it differs from the upstream model.
            </p>
          </>
        )}
        <FieldProblem id={`${id}-lines-problem`} problems={groupLineProblems} />
      </fieldset>

      <fieldset {...describedBy(retryProblems[''], `${id}-retry-problem`, `${id}-retry-hint`)}>
        <legend>Retries (optional)</legend>
        <p id={`${id}-retry-hint`} class="hint">
          A call is tried again after every line failed. An empty field takes the gateway's setting (by default <code>RETRY_ATTEMPTS</code> 0,{' '}
          <code>RETRY_BACKOFF_MS</code> 250, <code>RETRY_MAX_BACKOFF_MS</code> 5000).
        </p>
        <div class="form-row">
          {RETRY_FIELDS.map((name) => (
            <div class="control" key={name}>
              <label for={`${id}-retry-${name}`}>{RETRY_INPUTS[name].label}</label>
              <input
                id={`${id}-retry-${name}`}
                type="text"
                inputMode="numeric"
                autoComplete="off"
                value={draft.retry[name]}
                onInput={(event) => {
                  const value = event.currentTarget.value;
                  setDraft((current) => ({ ...current, retry: { ...current.retry, [name]: value } }));
                }}
                {...describedBy(retryProblems[name], `${id}-retry-${name}-problem`, `${id}-retry-${name}-hint`)}
              />
              <p id={`${id}-retry-${name}-hint`} class="hint">
                {RETRY_INPUTS[name].hint}
              </p>
              <FieldProblem id={`${id}-retry-${name}-problem`} problems={retryProblems[name]} />
            </div>
          ))}
        </div>
        <FieldProblem id={`${id}-retry-problem`} problems={retryProblems['']} />
      </fieldset>

      <fieldset {...field('capabilities')}>
        <legend>Capabilities</legend>
        <div class="check">
          <input
            id={`${id}-image_input`}
            type="checkbox"
            checked={draft.image_input}
            onChange={(event) => update({ image_input: event.currentTarget.checked })}
            aria-describedby={`${id}-image_input-hint`}
          />
          <label for={`${id}-image_input`}>Image input</label>
        </div>
        <p id={`${id}-image_input-hint`} class="hint">
          The model accepts images in its input.
        </p>
        <FieldProblem id={`${id}-capabilities-problem`} problems={problems.fields.capabilities} />
      </fieldset>

      <fieldset {...field('prices', `${id}-prices-hint`)}>
        <legend>Prices</legend>
        <p id={`${id}-prices-hint`} class="hint">
          In currency units: token and character figures per 1M, images and seconds per unit. No price: every call costs 0.
          {metered.length > 0 ? ` The chosen interfaces meter ${metered.join(', ')}.` : ' Choose interfaces to see which figures they meter.'}
        </p>
        <datalist id={`${id}-price-names`}>
          {[...metered, ...PRICE_NAMES.filter((name) => !metered.includes(name))].map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        <ul class="price-rows">
          {draft.prices.map((row, index) => {
            const invalid = badPrices.has(row.name.trim()) ? ('true' as const) : undefined;
            const unit = unitOf(row.name.trim());
            return (
              <li key={row.key} class="form-row price-row">
                <div class="control">
                  <label for={`${id}-price-name-${row.key}`}>
                    Price name<span class="visually-hidden"> {index + 1}</span>
                  </label>
                  <input
                    id={`${id}-price-name-${row.key}`}
                    data-price-name={row.key}
                    type="text"
                    class="mono"
                    list={`${id}-price-names`}
                    autoComplete="off"
                    spellcheck={false}
                    value={row.name}
                    onInput={(event) => setRow(row.key, { name: event.currentTarget.value })}
                    aria-invalid={invalid}
                    aria-describedby={invalid ? `${id}-prices-problem` : undefined}
                  />
                </div>
                <div class="control control-narrow">
                  <label for={`${id}-price-amount-${row.key}`}>
                    Amount<span class="visually-hidden"> of price {index + 1}</span>
                  </label>
                  <input
                    id={`${id}-price-amount-${row.key}`}
                    type="text"
                    inputMode="decimal"
                    autoComplete="off"
                    value={row.amount}
                    onInput={(event) => setRow(row.key, { amount: event.currentTarget.value })}
                    aria-invalid={invalid}
                    aria-describedby={
                      [unit ? `${id}-price-unit-${row.key}` : undefined, invalid ? `${id}-prices-problem` : undefined].filter(Boolean).join(' ') || undefined
                    }
                  />
                  {unit && (
                    <p id={`${id}-price-unit-${row.key}`} class="hint">
                      {unit}
                    </p>
                  )}
                </div>
                <div class="control control-button">
                  <button type="button" class="button-secondary button-small" onClick={() => removePrice(row.key)}>
                    Remove<span class="visually-hidden"> price {row.name.trim() === '' ? index + 1 : row.name.trim()}</span>
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
        <button type="button" class="button-secondary button-small" data-add-price onClick={addPrice}>
          Add a price
        </button>
        <FieldProblem id={`${id}-prices-problem`} problems={problems.fields.prices} />
      </fieldset>

      <div class="control control-wide">
        <label for={`${id}-price_tiers`}>Price tiers (JSON)</label>
        <textarea
          id={`${id}-price_tiers`}
          class="mono"
          rows={Math.min(12, Math.max(3, draft.tiers.split('\n').length))}
          spellcheck={false}
          value={draft.tiers}
          onInput={text('tiers')}
          {...field('price_tiers', `${id}-price_tiers-hint`)}
        />
        <p id={`${id}-price_tiers-hint`} class="hint">
          Prices for some calls only, tried in order: the first tier that matches a call replaces the prices it names. Each tier names at least one of{' '}
          <code>resolution</code> (a string or a list), <code>video_input</code> (true or false), <code>max_output_pixels</code> and{' '}
          <code>input_tokens_above</code> (long-context prices for the whole call), and its <code>prices</code>. Examples:{' '}
          <code>{'[{"resolution": ["1080p"], "prices": {"output_seconds": "0.8"}}]'}</code>,{' '}
          <code>{'[{"input_tokens_above": 200000, "prices": {"input_tokens": "6", "output_tokens": "22.5"}}]'}</code>. <code>[]</code> for none.
        </p>
        <FieldProblem id={`${id}-price_tiers-problem`} problems={problems.fields.price_tiers} />
      </div>
    </CatalogForm>
  );
}
