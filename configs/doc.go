// Package configs owns Tally's configuration: the YAML file's types, Load
// (decode with unknown keys refused, defaults, environment overrides,
// relative paths, validation of every field by its section's reader), the
// reading of every secret the config names (the API tokens, the webhook's
// signing secret, the mail password), each as a secret.Value registered
// for redaction as it is read, and the example configuration
// tally.example.yaml that documents every key.
//
// Core packages never read the environment or flags: the command line loads
// a Config here and hands its typed fields on.
package configs
