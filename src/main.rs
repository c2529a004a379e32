//! The `mhdb` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mhdb::sketch::{
    LshParams, MinHasher, Scheme, ShingleConfig, ShingleKind, SketchParams, TuneOptions, tune_all,
};

#[derive(Parser)]
#[command(
    name = "mhdb",
    version,
    about = "An embedded, crash-safe MinHash-LSH index"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct SketchArgs {
    /// Number of MinHash slots k.
    #[arg(long, default_value_t = 128)]
    perms: usize,
    /// Signature scheme: oph (one-permutation hashing, default) or kperm.
    #[arg(long, default_value = "oph")]
    scheme: Scheme,
    /// Seed from which every hash constant is derived.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Shingles: char:N or word:N.
    #[arg(long, default_value = "char:5")]
    shingle: ShingleKind,
}

#[derive(Subcommand)]
enum Command {
    /// Sketch every file of a directory and print the pairs at or above the threshold.
    ///
    /// Example: mhdb demo samples --threshold 0.5
    Demo {
        /// Directory of text files (one document per file).
        #[arg(default_value = "samples")]
        dir: PathBuf,
        /// Similarity threshold.
        #[arg(long, default_value_t = 0.5)]
        threshold: f64,
        #[command(flatten)]
        sketch: SketchArgs,
    },
    /// Choose (bands, rows) for a threshold and print the alternatives and the S-curve.
    ///
    /// Example: mhdb tune --threshold 0.8 --perms 128
    Tune {
        /// Similarity threshold in (0, 1).
        #[arg(long)]
        threshold: f64,
        /// Number of MinHash slots k.
        #[arg(long, default_value_t = 128)]
        perms: usize,
        /// How many alternatives to list.
        #[arg(long, default_value_t = 5)]
        alternatives: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mhdb: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        Command::Demo {
            dir,
            threshold,
            sketch,
        } => demo(&dir, threshold, &sketch),
        Command::Tune {
            threshold,
            perms,
            alternatives,
        } => {
            let all = tune_all(threshold, perms, &TuneOptions::default())?;
            println!("threshold {threshold}, {perms} slots");
            println!("  bands  rows  P(t)      false-pos  false-neg");
            for t in all.iter().take(alternatives.max(1)) {
                println!(
                    "  {:5}  {:4}  {:.5}   {:.5}    {:.5}{}",
                    t.params.bands,
                    t.params.rows,
                    t.recall_at_threshold,
                    t.false_positive,
                    t.false_negative,
                    if t.meets_recall_floor {
                        ""
                    } else {
                        "  (below the 0.95 recall floor)"
                    }
                );
            }
            if let Some(best) = all.first() {
                print_curve(&best.params);
            }
            Ok(())
        }
    }
}

fn print_curve(params: &LshParams) {
    println!(
        "S-curve of {} bands × {} rows (probability of becoming a candidate):",
        params.bands, params.rows
    );
    let points: Vec<f64> = (1..=19).map(|i| i as f64 * 0.05).collect();
    for (s, p) in params.curve(&points) {
        let bar = "#".repeat((p * 40.0).round() as usize);
        println!("  J={s:.2}  {p:.4}  {bar}");
    }
}

fn demo(
    dir: &PathBuf,
    threshold: f64,
    args: &SketchArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    let hasher = MinHasher::new(SketchParams {
        scheme: args.scheme,
        num_perm: args.perms,
        seed: args.seed,
        shingle: ShingleConfig {
            kind: args.shingle,
            ..ShingleConfig::default()
        },
    })?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut texts = Vec::with_capacity(paths.len());
    for p in &paths {
        let bytes = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{} is not UTF-8 (byte offset {})",
                p.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        texts.push(text);
    }
    let signatures = hasher.sketch_batch(&texts);
    let tuning = mhdb::sketch::tune(threshold, args.perms, &TuneOptions::default())?;
    println!(
        "{} documents, {} {} slots, {}; LSH {} bands × {} rows for threshold {threshold}",
        paths.len(),
        args.perms,
        args.scheme,
        args.shingle,
        tuning.params.bands,
        tuning.params.rows
    );
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut pairs = Vec::new();
    for i in 0..signatures.len() {
        for j in i + 1..signatures.len() {
            let est = signatures[i].jaccard(&signatures[j])?;
            if est >= threshold {
                pairs.push((est, name(&paths[i]), name(&paths[j])));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("near-duplicate pairs (estimated Jaccard ≥ {threshold}):");
    for (est, a, b) in &pairs {
        println!("  {est:.3}  {a}  ~  {b}");
    }
    if pairs.is_empty() {
        println!("  (none)");
    }
    print_curve(&tuning.params);
    Ok(())
}
