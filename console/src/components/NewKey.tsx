import { useEffect, useRef, useState } from 'preact/hooks';
import type { CreatedKeyView } from '../types';

/**
 * The key of a new key, shown this once: the gateway keeps only its hash. The value leaves memory
 * when the operator closes the panel.
 */
export function NewKey({ created, onClose }: { created: CreatedKeyView; onClose: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'select' | undefined>(undefined);

  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, [created.key]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied('yes');
    } catch {
      // No clipboard access (an http page, a refused permission): leave the text selected to copy by hand.
      field.current?.focus();
      field.current?.select();
      setCopied('select');
    }
  };

  return (
    <section class="panel panel-highlight" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Key created for {created.owner}</h2>
      <p>
        <strong>Copy the key now: it will not be shown again.</strong> The gateway stores only its hash; the list shows its prefix <code>{created.prefix}</code>
        .
      </p>
      <div class="copy-row">
        <label for="new-key-value">New key</label>
        <input id="new-key-value" ref={field} class="mono" type="text" readOnly value={created.key} spellcheck={false} autoComplete="off" />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p role="status" class="hint">
        {copied === 'yes' && 'Copied to the clipboard.'}
        {copied === 'select' && 'The browser did not allow copying: the key is selected, press Ctrl+C (⌘C on a Mac) to copy it.'}
      </p>
      <button type="button" class="button-secondary" onClick={onClose}>
        I have stored the key
      </button>
    </section>
  );
}
