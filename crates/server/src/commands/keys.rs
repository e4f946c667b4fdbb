//! `care-mcp keys generate`: a new Nostr keypair for an approver (or the server). The secret
//! goes to stdout because printing it is exactly what the operator asked for.

use std::process::ExitCode;

use crate::cli::KeysCommand;
use crate::startup::StartError;

pub fn run(action: KeysCommand) -> Result<ExitCode, StartError> {
    match action {
        KeysCommand::Generate => {
            let pair = care_nostr::keys::generate();
            #[allow(clippy::print_stdout)]
            {
                println!("nsec: {}", pair.nsec);
                println!("npub: {}", pair.npub);
                println!("hex:  {}", pair.public_hex);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
