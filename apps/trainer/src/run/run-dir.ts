import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TrainConfig } from '../config/schema.js';
import { TrainerError } from '../errors.js';

/**
 * The layout of `runs/<name>/`:
 *   config.json          the resolved config (what `--resume` reloads)
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

  /** Creates a fresh run directory; refuses to overwrite a run that already has metrics. */
  create(cfg: TrainConfig, opts: { overwrite: boolean }): void {
    if (existsSync(this.metricsPath) && !opts.overwrite) {
      throw new TrainerError(
        'RUN_DIR',
        `run: ${this.root} already holds a run; continue it with --resume ${this.root}, pick another --name, or pass --overwrite`,
      );
    }
    rmSync(this.root, { recursive: true, force: true });
    mkdirSync(this.checkpointsDir, { recursive: true });
    writeFileSync(this.configPath, `${JSON.stringify(cfg, null, 2)}\n`);
  }

  readConfig(): unknown {
    try {
      return JSON.parse(readFileSync(this.configPath, 'utf8'));
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
    const final = this.checkpointDir(tag);
    const tmp = `${final}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    await write(tmp);
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    const pointer = join(this.checkpointsDir, 'latest');
    writeFileSync(`${pointer}.tmp`, `${tag}\n`);
    renameSync(`${pointer}.tmp`, pointer);
  }
}
