//! SIGINT and SIGTERM, caught in one place for every command that must say something when it
//! is stopped: `serve` awaits [`stop_signal`] and stops after the requests under way; `add`
//! has [`on_stop`] say what it committed before the process ends.

/// A signal asking the process to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Stop {
    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit status a shell reports for a process this signal ended: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

type Signals = (tokio::signal::unix::Signal, tokio::signal::unix::Signal);

/// Installs the handlers (from then on the signals no longer end the process by themselves);
/// must run inside a tokio runtime.
fn install() -> std::io::Result<Signals> {
    use tokio::signal::unix::{SignalKind, signal};
    Ok((
        signal(SignalKind::interrupt())?,
        signal(SignalKind::terminate())?,
    ))
}

/// The first of the signals to come.
async fn first((mut int, mut term): Signals) -> Stop {
    let (int, term) = (Box::pin(int.recv()), Box::pin(term.recv()));
    match futures_util::future::select(int, term).await {
        futures_util::future::Either::Left(_) => Stop::Interrupt,
        futures_util::future::Either::Right(_) => Stop::Terminate,
    }
}

/// Resolves on the first SIGINT or SIGTERM; never when the handlers cannot be installed (the
/// process then stops as any process does).
pub async fn stop_signal() -> Stop {
    match install() {
        Ok(signals) => first(signals).await,
        Err(_) => std::future::pending().await,
    }
}

/// At the first SIGINT or SIGTERM, runs `last_words` on a thread of its own, then ends the
/// process with the signal's exit status. Returns once the handlers are installed, so that
/// every signal from then on is caught; if they cannot be, the signals stop the process as
/// they would any process.
pub fn on_stop(last_words: impl FnOnce(Stop) + Send + 'static) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let installed = {
        let _inside = runtime.enter();
        install()
    };
    let Ok(signals) = installed else {
        return;
    };
    std::thread::spawn(move || {
        let stop = runtime.block_on(first(signals));
        last_words(stop);
        std::process::exit(stop.exit_code().into());
    });
}
