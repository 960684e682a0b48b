import { useId, useState } from 'preact/hooks';
import { listOwners, listVideoTasks } from '../api';
import { PagedListView } from '../components/ListView';
import { OwnerOptions } from '../components/OwnerOptions';
import { ErrorAlert } from '../components/Status';
import { ScrollTable } from '../components/Table';
import { Time } from '../components/Time';
import { amountFromNano } from '../format';
import { useLoad, usePagedList } from '../hooks';
import { href } from '../router';
import type { VideoTaskState, VideoTaskView } from '../types';

const PAGE_SIZE = 50;

interface VideoFilters {
  state?: VideoTaskState;
  owner?: string;
}

/** The applied filters live in the hash (`#/video?state=open&owner=team-a`), so a filtered list can be linked. */
function filtersOf(params: URLSearchParams): VideoFilters {
  const state = params.get('state');
  const owner = params.get('owner');
  return {
    ...(state === 'open' || state === 'settled' ? { state } : {}),
    ...(owner ? { owner } : {}),
  };
}

export function VideoTasksPage({ params }: { params: URLSearchParams }) {
  const filters = filtersOf(params);
  const filterKey = JSON.stringify(filters);
  const list = usePagedList(filterKey, (page) => listVideoTasks({ ...filters, ...page }), PAGE_SIZE);
  const described = filters.state === 'open' ? 'Open video tasks' : filters.state === 'settled' ? 'Settled video tasks' : 'Video tasks';

  return (
    <>
      <h1 tabIndex={-1}>Video tasks</h1>
      <p class="lead">
        A video task holds a reservation on its owner's budget from its submit until it settles: billed from its usage, by the reservation, or not at all.
        Newest first.
      </p>
      <VideoFilterForm key={filterKey} filters={filters} />
      <section aria-labelledby="video-heading">
        <h2 id="video-heading">
          {described}
          {filters.owner && ` of ${filters.owner}`}
        </h2>
        <PagedListView
          list={list}
          label="Video tasks"
          what="video tasks"
          errorTitle="Video tasks could not be loaded."
          empty="No video tasks match these filters."
        >
          {(tasks) => <VideoTable tasks={tasks} />}
        </PagedListView>
      </section>
    </>
  );
}

function VideoTable({ tasks }: { tasks: VideoTaskView[] }) {
  return (
    <ScrollTable labelledBy="video-heading">
      <thead>
        <tr>
          <th scope="col">Task id</th>
          <th scope="col">Owner</th>
          <th scope="col">Model</th>
          <th scope="col">Status</th>
          <th scope="col">Submitted</th>
          <th scope="col" class="number">
            Reserved
          </th>
          <th scope="col">Settled</th>
          <th scope="col">Settlement</th>
          <th scope="col" class="number">
            Cost
          </th>
          <th scope="col">Submit request</th>
        </tr>
      </thead>
      <tbody>
        {tasks.map((task) => (
          <tr key={task.id}>
            <th scope="row">
              <code>{task.id}</code>
            </th>
            <td>
              <a href={href('owners', { owner: task.owner_id })}>{task.owner_id}</a>
            </td>
            <td>
              {task.model}
              <span class="muted"> ({task.interface})</span>
            </td>
            <td>
              <code>{task.status}</code>
              {task.last_error && <div class="muted cell-note">{task.last_error}</div>}
            </td>
            <td>
              <Time iso={task.submitted_at} />
            </td>
            <td class="number">{amountFromNano(task.reserved_nano)}</td>
            <td>{task.settled_at === null ? <span class="badge badge-warn">Open</span> : <Time iso={task.settled_at} />}</td>
            <td>{task.settlement ?? <span class="muted">—</span>}</td>
            <td class="number">{task.cost_nano === null ? <span class="muted">—</span> : amountFromNano(task.cost_nano)}</td>
            <td>
              <a class="mono" href={href('calls', { request: task.submit_request_id })}>
                <span class="visually-hidden">Call </span>
                {task.submit_request_id}
              </a>
            </td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

/** The filter fields; applying them writes the hash, which loads the list. */
function VideoFilterForm({ filters }: { filters: VideoFilters }) {
  const id = useId();
  const owners = useLoad(listOwners, []);
  const [state, setState] = useState<string>(filters.state ?? '');
  const [owner, setOwner] = useState(filters.owner ?? '');

  const apply = (event: Event) => {
    event.preventDefault();
    const values: Record<string, string> = {};
    if (state !== '') values.state = state;
    if (owner !== '') values.owner = owner;
    location.hash = href('video', values);
  };

  return (
    <form class="filters panel" onSubmit={apply} aria-label="Filter video tasks">
      <div class="form-row">
        <div class="control">
          <label for={`${id}-state`}>State</label>
          <select id={`${id}-state`} value={state} onChange={(event) => setState(event.currentTarget.value)} aria-describedby={`${id}-state-hint`}>
            <option value="">All tasks</option>
            <option value="open">Open (reserved)</option>
            <option value="settled">Settled</option>
          </select>
          <p id={`${id}-state-hint`} class="hint">
            Open tasks still hold a reservation.
          </p>
        </div>
        <div class="control">
          <label for={`${id}-owner`}>Owner</label>
          <select id={`${id}-owner`} value={owner} onChange={(event) => setOwner(event.currentTarget.value)}>
            <OwnerOptions any="Any owner" owners={owners.data} chosen={owner} />
          </select>
          <ErrorAlert error={owners.error} title="Owners could not be loaded." />
        </div>
      </div>
      <div class="actions">
        <button type="submit">Apply filters</button>
        <a class="button button-secondary" href={href('video')}>
          Clear filters
        </a>
      </div>
    </form>
  );
}
