-- Reserved: number 0024 is another branch's migration. This empty stand-in
-- keeps the numbering without gaps on this branch; drop it at the merge.
SELECT 1;
