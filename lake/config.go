package lake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tally-dev/tally/configs"
)

// ConfigFor is the lake cfg names, for the export folder dir:
// the config's lake.catalog (a PostgreSQL catalog with its password from
// lake.password_env or password_file), or the default SQLite catalog in
// dir's lake folder; lake.warehouse, or the warehouse folder beside it; for
// a warehouse on S3, lake.s3 with its keys from their variables or files.
func ConfigFor(cfg *configs.Config, dir string) (Config, error) {
	if dir == "" {
		return Config{}, errors.New("lake: the export folder is empty; give --to DIR or set export.dir")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Config{}, fmt.Errorf("lake: %w", err)
	}
	c := Config{
		SQLite:    cfg.Lake.SQLite,
		Postgres:  cfg.Lake.Postgres,
		Warehouse: cfg.Lake.Warehouse,
		Namespace: cfg.Lake.Namespace,
	}
	if c.Warehouse == "" {
		c.Warehouse = filepath.Join(dir, configs.LakeDir, "warehouse")
	}
	if c.Postgres != "" {
		pw, err := cfg.Lake.Password(os.Getenv)
		if err != nil {
			return Config{}, err
		}
		c.Password = pw.Reveal()
	} else if c.SQLite == "" {
		c.SQLite = filepath.Join(dir, configs.LakeDir, "catalog.db")
	}
	if cfg.Lake.OnS3() {
		s := cfg.Lake.S3
		access, secretKey, err := cfg.Lake.S3Keys(os.Getenv)
		if err != nil {
			return Config{}, err
		}
		c.S3 = &S3{Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle, AccessKey: access.Reveal(), SecretKey: secretKey.Reveal()}
	}
	return c, nil
}
