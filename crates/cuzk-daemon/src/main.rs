//! `cuzk-daemon`: the cuzk proving daemon. With no arguments it serves 127.0.0.1:9820 with
//! the embedded configuration; `--config` layers a TOML file on top.
#![forbid(unsafe_code)]

use anyhow::{Context, Result};
use clap::Parser;
use cuzk_daemon::server::{self, Listeners};
use cuzk_daemon::{Config, DEFAULT_CONFIG};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{signal, Signal, SignalKind};

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-daemon",
    version,
    about = "The cuzk Groth16 proving daemon (gRPC, cuzk.v1.ProvingEngine)"
)]
struct Args {
    /// TOML configuration read on top of the embedded default.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Overrides server.listen (IP:port; port 0 picks a free one).
    #[arg(long)]
    listen: Option<String>,
    /// Overrides server.metrics_listen (IP:port, or "" for none).
    #[arg(long)]
    metrics_listen: Option<String>,
    /// Prints the embedded default configuration and exits.
    #[arg(long)]
    print_default_config: bool,
    /// Checks the configuration and exits.
    #[arg(long)]
    check_config: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.print_default_config {
        print!("{DEFAULT_CONFIG}");
        return ExitCode::SUCCESS;
    }
    let settings = match load(&args) {
        Ok(s) => s,
        Err(e) => {
            // Logging is not set up yet: the configuration chooses its filter.
            eprintln!("cuzk-daemon: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if args.check_config {
        // The token is a secret: say whether one is set, never what it is.
        let mut shown = settings.clone();
        shown.auth_token = shown.auth_token.as_ref().map(|_| "<set>".to_string());
        println!("configuration OK: {shown:#?}");
        return ExitCode::SUCCESS;
    }
    init_logging(&settings.log_filter);
    match serve(settings) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("cannot run: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn load(args: &Args) -> Result<cuzk_daemon::Settings> {
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::embedded(),
    };
    if let Some(listen) = &args.listen {
        config.server.listen = listen.clone();
    }
    if let Some(metrics) = &args.metrics_listen {
        config.server.metrics_listen = metrics.clone();
    }
    Ok(config.settings()?)
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: a log file gets plain lines to grep.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn serve(settings: cuzk_daemon::Settings) -> Result<()> {
    // Bound before the runtime or the scheduler start: a taken port is reported at once.
    let listeners = Listeners::bind(&settings)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("cuzk-rpc")
        .enable_all()
        .build()
        .context("building the async runtime")?;
    runtime.block_on(async {
        // Handlers are installed before serving, so a signal that arrives early is not
        // the default (immediate death) but a clean shutdown.
        let signals = Signals::install().context("installing signal handlers")?;
        server::run(settings, listeners, signals.first()).await?;
        Ok(())
    })
}

/// SIGTERM and SIGINT stop the daemon cleanly; a second one stops it at once. SIGHUP is
/// ignored, so that closing the terminal that started it does not kill it.
struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn first(mut self) -> &'static str {
        let name = loop {
            tokio::select! {
                _ = self.term.recv() => break "SIGTERM",
                _ = self.int.recv() => break "SIGINT",
                _ = self.hup.recv() => tracing::info!("SIGHUP ignored (stop with SIGTERM or SIGINT)"),
            }
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = self.term.recv() => {}
                _ = self.int.recv() => {}
            }
            tracing::warn!("second signal: exiting without waiting for jobs");
            std::process::exit(1);
        });
        name
    }
}
