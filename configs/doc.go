// Package configs owns Tally's configuration: the YAML file's types, Load
// (decode into typed leaves with unknown keys refused, then one pass of
// checks, section by section, that collects every problem with its key,
// value and line; defaults, environment overrides, relative paths), the
// reading of every secret the config names (the API tokens, the webhook's
// signing secret, the mail password), each as a secret.Value registered
// for redaction as it is read, the shard of the organizations a run takes
// (ParseShard, ShardOf, Config.TakeShard), and the example configuration
// tally.example.yaml that documents every key.
//
// Core packages never read the environment or flags: the command line loads
// a Config here and hands its typed fields on.
package configs
