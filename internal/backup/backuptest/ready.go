package backuptest

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/testproc"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// startTimeout bounds how long a server may take to store its first
// object.
const startTimeout = 90 * time.Second

// ready waits until the S3 API at loc answers, creates the bucket and
// stores (then deletes) an object: the first write also waits for the
// master to see the volume server and grow volumes.
func ready(ctx context.Context, loc desktop.S3Location, exited <-chan struct{}) error {
	c, err := minio.New(loc.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(loc.AccessKey, loc.SecretKey, ""),
		Region:       loc.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	step := func(ctx context.Context) error {
		if err := c.MakeBucket(ctx, loc.Bucket, minio.MakeBucketOptions{Region: loc.Region}); err != nil {
			code := minio.ToErrorResponse(err).Code
			if code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return fmt.Errorf("create bucket %s: %w", loc.Bucket, err)
			}
		}
		const probe = "bureau-ready-probe"
		if _, err := c.PutObject(ctx, loc.Bucket, probe, bytes.NewReader([]byte("ok")), 2, minio.PutObjectOptions{DisableMultipart: true}); err != nil {
			return fmt.Errorf("store a first object: %w", err)
		}
		return c.RemoveObject(ctx, loc.Bucket, probe, minio.RemoveObjectOptions{})
	}
	return testproc.Ready(ctx, "weed", loc.Endpoint, exited, 5*time.Second, 100*time.Millisecond, step)
}
