import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';
import { replaceDir } from './replace-dir.js';
import type { RunWorld } from './world.js';

/** The file that says "agentrl train made this directory"; nothing without it is ever deleted. */
export const RUN_MARKER = '.agentrl-run';
const MARKER_FORMAT = 'agentrl-run';
const MARKER_VERSION = 1;

/** Everything a run directory holds that the trainer wrote; `--overwrite` removes these and only these. */
const RUN_ENTRIES = [
  'config.json',
  'metrics.jsonl',
  'sft-data.jsonl',
  'checkpoints',
  'report.html',
  RUN_MARKER,
] as const;

/**
 * The layout of `runs/<name>/`:
 *   .agentrl-run         marker {format, version}: the directory holds a run (written first)
 *   config.json          the resolved config (what `--resume` reloads) and, under `world`, what the
 *                        run ran on: ranks, threads, CPU kernel path, commit (one entry per resume
 *                        under `world.resumes`)
 *   metrics.jsonl        one line per SFT step, RL step and evaluation
 *   sft-data.jsonl       the cold-start demonstrations, for inspection
 *   checkpoints/<tag>/   model.safetensors + config.json (a valid HF checkpoint), optimizer state,
 *                        trainer-state.json (step, stage, RNG, data cursor)
 *   checkpoints/latest   the tag of the newest complete checkpoint
 *   report.html          self-contained training curves
 */
export class RunDir {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  static forConfig(cfg: TrainConfig): RunDir {
    return new RunDir(join(cfg.runsDir, cfg.name));
  }

  get markerPath() {
    return join(this.root, RUN_MARKER);
  }
  get configPath() {
    return join(this.root, 'config.json');
  }
  get metricsPath() {
    return join(this.root, 'metrics.jsonl');
  }
  get reportPath() {
    return join(this.root, 'report.html');
  }
  get sftDataPath() {
    return join(this.root, 'sft-data.jsonl');
  }
  get checkpointsDir() {
    return join(this.root, 'checkpoints');
  }
  checkpointDir(tag: string) {
    return join(this.checkpointsDir, tag);
  }

  /** Whether the directory carries a marker this trainer version wrote. */
  holdsRun(): boolean {
    try {
      const m = JSON.parse(readFileSync(this.markerPath, 'utf8')) as { format?: unknown; version?: unknown };
      return m.format === MARKER_FORMAT && m.version === MARKER_VERSION;
    } catch {
      return false;
    }
  }

  /**
   * Creates a fresh run directory. A missing or empty directory is used as is; a run directory (the
   * marker) is replaced only with `overwrite`, and then only the entries a run holds are removed;
   * any other non-empty directory is refused, with or without `overwrite`.
   */
  create(cfg: TrainConfig, opts: { overwrite: boolean; world?: RunWorld }): void {
    if (this.assertCreatable(opts)) {
      for (const e of RUN_ENTRIES) rmSync(join(this.root, e), { recursive: true, force: true });
    }
    mkdirSync(this.root, { recursive: true });
    // The marker goes first: a kill at any later point leaves a directory a rerun may replace.
    writeFileSync(
      this.markerPath,
      `${JSON.stringify({ format: MARKER_FORMAT, version: MARKER_VERSION, name: cfg.name })}\n`,
    );
    mkdirSync(this.checkpointsDir, { recursive: true });
    this.writeConfig({ ...cfg, ...(opts.world ? { world: opts.world } : {}) });
  }

  /** Adds the world of a resumed process to config.json's `world.resumes`. */
  recordResume(world: RunWorld & { rlStep: number }): void {
    const saved = this.readSaved();
    const first = (saved.world ?? {}) as { resumes?: unknown[] };
    this.writeConfig({ ...saved, world: { ...first, resumes: [...(first.resumes ?? []), world] } });
  }

  private writeConfig(value: unknown): void {
    writeAtomic(this.configPath, `${JSON.stringify(value, null, 2)}\n`);
  }

  /**
   * Throws unless `create` may proceed; true when it would replace an existing run. Called before
   * anything heavy starts, so a refused directory costs nothing.
   */
  assertCreatable(opts: { overwrite: boolean }): boolean {
    const entries = this.existingEntries();
    if (entries && entries.length > 0) {
      if (!this.holdsRun()) {
        throw new TrainerError(
          'RUN_DIR',
          `run: ${this.root} is not empty and is not a run directory (no ${RUN_MARKER} marker), so agentrl will not write into or delete it, --overwrite or not; pick another --name or --runsDir, or move its files away yourself`,
        );
      }
      if (!opts.overwrite) {
        throw new TrainerError(
          'RUN_DIR',
          `run: ${this.root} already holds a run; continue it with --resume ${this.root}, pick another --name, or pass --overwrite to replace it`,
        );
      }
      return true;
    }
    return false;
  }

  /** The directory's entries, null when it does not exist; a path that is not a directory is refused. */
  private existingEntries(): string[] | null {
    let isDir: boolean;
    try {
      isDir = lstatSync(this.root).isDirectory();
    } catch {
      return null;
    }
    if (!isDir) {
      throw new TrainerError(
        'RUN_DIR',
        `run: ${this.root} exists and is not a directory; pick another --name or --runsDir`,
      );
    }
    return readdirSync(this.root);
  }

  /** The saved config, without the `world` record (which is not configuration). */
  readConfig(): unknown {
    const { world: _world, ...cfg } = this.readSaved();
    return cfg;
  }

  /** config.json's `world`: what the run ran on (undefined for runs made before it was recorded). */
  readWorld(): (RunWorld & { resumes?: (RunWorld & { rlStep: number })[] }) | undefined {
    return this.readSaved().world as ReturnType<RunDir['readWorld']>;
  }

  private readSaved(): Record<string, unknown> {
    try {
      const saved = JSON.parse(readFileSync(this.configPath, 'utf8')) as unknown;
      if (!saved || typeof saved !== 'object' || Array.isArray(saved)) throw new Error('not a JSON object');
      return saved as Record<string, unknown>;
    } catch (cause) {
      throw new TrainerError(
        'RUN_DIR',
        `run: ${this.configPath} is missing or unreadable; --resume needs a run directory written by agentrl train`,
        { cause },
      );
    }
  }

  /** The newest complete checkpoint's tag, or null. */
  latestCheckpoint(): string | null {
    const p = join(this.checkpointsDir, 'latest');
    if (!existsSync(p)) return null;
    const tag = readFileSync(p, 'utf8').trim();
    return existsSync(join(this.checkpointDir(tag), 'trainer-state.json')) ? tag : null;
  }

  /**
   * Writes a checkpoint atomically: into `<tag>.tmp`, then a rename, then the `latest` pointer by
   * rename. A kill -9 at any point leaves the previous checkpoint intact and `latest` valid.
   */
  async writeCheckpoint(tag: string, write: (dir: string) => Promise<void>): Promise<void> {
    await replaceDir(this.checkpointDir(tag), write);
    writeAtomic(join(this.checkpointsDir, 'latest'), `${tag}\n`);
  }
}

/** Writes `text` beside `path` and renames it over: a kill leaves the old file or the new, never half. */
function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}
